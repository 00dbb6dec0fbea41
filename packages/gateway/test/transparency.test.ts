import { gunzipSync, gzipSync } from 'node:zlib';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startLabServer } from '@resumewatch/lab';
import { GatewayRefusal } from '@resumewatch/semconv';
import { describe, expect, it, vi } from 'vitest';
import { startGateway } from '../src/index.js';
import { headerLines, open, rawExchange, send } from './helpers/raw-client.js';
import { gatewayOptions, rigPerTest, startScriptedUpstream } from './helpers/scripted-upstream.js';

const rig = rigPerTest();

/** Every byte value, then bytes that are no UTF-8 at all, a CRLF, a NUL run: nothing may be re-encoded. */
const ODD = Buffer.concat([
  Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
  Buffer.from([0xc3, 0x28, 0xe2, 0x82, 0xff, 0xfe, 0x0d, 0x0a, 0, 0, 0]),
]);

describe('gateway transparency', () => {
  it('passes method, path, query, end-to-end request headers and the body bytes unchanged, and drops hop-by-hop ones', async () => {
    const { upstream, endpoint } = await rig((_req, res) => res.writeHead(200).end());
    const headers = {
      'Mcp-Session-Id': 'sess-1',
      'Last-Event-ID': 'ev-9',
      'MCP-Protocol-Version': '2025-11-25',
      'Mcp-Method': 'tools/call',
      'Mcp-Name': 'echo',
      Authorization: 'Bearer t0k3n',
      Origin: 'http://127.0.0.1:1',
      Accept: 'application/json, text/event-stream',
      'Content-Type': 'application/octet-stream',
      'X-Repeated': ['one', 'two'],
      Connection: 'keep-alive, X-Hop',
      'X-Hop': 'connection-only',
      'Keep-Alive': 'timeout=5',
      'Proxy-Connection': 'keep-alive',
      TE: 'trailers',
    };
    const response = await send(`${endpoint}/sub?a=1&b=%20x`, { method: 'POST', headers, body: ODD });
    expect(response.status).toBe(200);

    const [seen] = upstream.seen;
    expect(seen!.method).toBe('POST');
    expect(seen!.url).toBe('/mcp/sub?a=1&b=%20x');
    expect(seen!.body.equals(ODD)).toBe(true);
    const h = seen!.headers;
    expect(h['mcp-session-id']).toBe('sess-1');
    expect(h['last-event-id']).toBe('ev-9');
    expect(h['mcp-protocol-version']).toBe('2025-11-25');
    expect(h['mcp-method']).toBe('tools/call');
    expect(h['mcp-name']).toBe('echo');
    expect(h['authorization']).toBe('Bearer t0k3n');
    expect(h['origin']).toBe('http://127.0.0.1:1');
    expect(h['accept']).toBe('application/json, text/event-stream');
    expect(h['content-type']).toBe('application/octet-stream');
    expect(h['content-length']).toBe(String(ODD.byteLength));
    expect(h['x-repeated']).toBe('one, two');
    expect(h['host']).toBe(new URL(upstream.url).host);
    for (const hop of ['x-hop', 'keep-alive', 'proxy-connection', 'te']) expect(h[hop], hop).toBeUndefined();
    expect(h['connection'] ?? 'keep-alive').toBe('keep-alive'); // the gateway's own connection, if any
  });

  it('joins a repeated request field into one line, Cookie with "; ", spelled as first sent, in the order sent', async () => {
    const { upstream, endpoint } = await rig((_req, res) => res.writeHead(200).end());
    // Each header line as the client wrote it: the same fields as Node's client sends them, and names
    // that differ only in case (a repeat all the same).
    const exchange = await rawExchange(
      endpoint,
      [
        'POST /mcp HTTP/1.1',
        'Host: 127.0.0.1',
        'X-First: 1',
        'Cookie: a=1',
        'x-multi: one',
        'X-Multi: two',
        'cookie: b=2',
        'X-Last: z',
        'Content-Length: 2',
        'Connection: close',
        '',
        '{}',
      ].join('\r\n'),
    );
    expect(exchange).toMatch(/^HTTP\/1\.1 200/);
    const raw = upstream.seen[0]!.rawHeaders;
    const names = raw.filter((_, i) => i % 2 === 0);
    expect(names.filter((n) => /^(x-first|cookie|x-multi|x-last)$/i.test(n))).toEqual([
      'X-First',
      'Cookie',
      'x-multi',
      'X-Last',
    ]);
    expect(headerLines(raw, 'cookie')).toEqual(['a=1; b=2']);
    expect(headerLines(raw, 'x-multi')).toEqual(['one, two']);
    expect(headerLines(raw, 'content-length')).toEqual(['2']);
  });

  it('passes status, reason, end-to-end response headers (each Set-Cookie line) and odd body bytes unchanged', async () => {
    const { endpoint } = await rig((_req, res) => {
      res.statusMessage = 'Custom Reason';
      res.setHeader('Content-Type', 'application/octet-stream');
      res.setHeader('Mcp-Session-Id', 'sess-2');
      res.setHeader('Set-Cookie', ['a=1; Path=/', 'b=2, with comma; HttpOnly']);
      res.setHeader('X-Upstream', 'yes');
      res.setHeader('Connection', 'X-Resp-Hop');
      res.setHeader('X-Resp-Hop', 'connection-only');
      res.setHeader('Content-Length', ODD.byteLength);
      res.writeHead(418);
      res.end(ODD);
    });
    const response = await send(endpoint, { method: 'POST', body: '{}' });
    expect(response.status).toBe(418);
    expect(response.statusMessage).toBe('Custom Reason');
    expect(response.body.equals(ODD)).toBe(true);
    expect(response.complete).toBe(true);
    expect(headerLines(response.rawHeaders, 'set-cookie')).toEqual(['a=1; Path=/', 'b=2, with comma; HttpOnly']);
    expect(response.headers['mcp-session-id']).toBe('sess-2');
    expect(response.headers['x-upstream']).toBe('yes');
    expect(response.headers['content-type']).toBe('application/octet-stream');
    expect(response.headers['x-resp-hop']).toBeUndefined();
  });

  it('passes a gzip-encoded body as the upstream compressed it, never decoded', async () => {
    const json = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { text: 'x'.repeat(5000) } });
    const gzipped = gzipSync(json);
    const { endpoint } = await rig((_req, res) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-encoding': 'gzip',
        'content-length': gzipped.byteLength,
      });
      res.end(gzipped);
    });
    const response = await send(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(200);
    expect(response.headers['content-encoding']).toBe('gzip');
    expect(response.headers['content-length']).toBe(String(gzipped.byteLength));
    expect(response.body.equals(gzipped)).toBe(true);
    expect(gunzipSync(response.body).toString()).toBe(json);
  });

  it('forwards each SSE event as it arrives, while the upstream still holds the stream open', async () => {
    const events = [
      'id: e1\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n',
      ': keepalive\n\n',
      'id: e2\ndata: {"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n\n',
    ];
    let release: (() => void) | undefined;
    const { upstream, endpoint } = await rig(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 's' });
      res.write(events[0]);
      await new Promise<void>((resolve) => (release = resolve));
      res.write(events[1]);
      res.write(events[2]);
      res.end();
    });
    const exchange = await open(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow' } }),
    });
    expect(exchange.res.headers['content-type']).toBe('text/event-stream');
    await vi.waitFor(() => expect(exchange.text()).toBe(events[0]), { timeout: 3_000 });
    // The first event arrived whole while the upstream's response is still open: nothing waits for the end.
    expect(release).toBeTypeOf('function');
    release!();
    expect(await exchange.ended).toEqual({ complete: true });
    expect(exchange.text()).toBe(events.join(''));
    expect(await upstream.seen[0]!.closed).toEqual({ finished: true });
  });

  it('carries a JSON answer, a 202, the standalone GET stream and a DELETE', async () => {
    const init = JSON.stringify({ jsonrpc: '2.0', id: 0, result: { protocolVersion: '2025-11-25' } });
    const { upstream, endpoint } = await rig((req, res, seen) => {
      if (req.method === 'DELETE') return void res.writeHead(200, { 'mcp-session-id': 'sess' }).end();
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'sess' });
        res.write('id: l1\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n');
        return; // held open, as a listening stream is
      }
      if (seen.body.includes('"initialize"'))
        return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'sess' }).end(init);
      res.writeHead(202).end();
    });
    const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const initialized = await send(endpoint, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }),
    });
    expect(initialized.status).toBe(200);
    expect(initialized.headers['mcp-session-id']).toBe('sess');
    expect(initialized.body.toString()).toBe(init);

    const session = { ...json, 'mcp-session-id': 'sess' };
    const accepted = await send(endpoint, {
      method: 'POST',
      headers: session,
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });
    expect(accepted.status).toBe(202);
    expect(accepted.body.byteLength).toBe(0);

    const listening = await open(endpoint, { headers: { accept: 'text/event-stream', 'mcp-session-id': 'sess' } });
    expect(listening.res.statusCode).toBe(200);
    await vi.waitFor(() => expect(listening.text()).toContain('id: l1\n'), { timeout: 3_000 });

    const deleted = await send(endpoint, { method: 'DELETE', headers: { 'mcp-session-id': 'sess' } });
    expect(deleted.status).toBe(200);
    expect(upstream.seen.map((s) => s.method)).toEqual(['POST', 'POST', 'GET', 'DELETE']);
    listening.req.destroy();
  });

  it('refuses an absolute-form target and CONNECT without contacting the upstream', async () => {
    const { upstream, gateway } = await rig((_req, res) => res.writeHead(200).end('reached'));
    const absolute = await rawExchange(
      gateway.url,
      `GET ${upstream.url} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
    );
    expect(absolute).toMatch(/^HTTP\/1\.1 400 /);
    const body = JSON.parse(absolute.slice(absolute.indexOf('\r\n\r\n') + 4)) as { id: unknown; error: object };
    expect(body).toMatchObject({ id: null, error: { message: expect.stringContaining('origin-form') } });
    expect(gateway.counts().refusals[GatewayRefusal.NOT_PROXIED]).toBe(1);

    const { host } = new URL(upstream.url);
    const tunnel = await rawExchange(gateway.url, `CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\n`, 1_000);
    // Never a tunnel: 405 with a JSON-RPC error body, counted.
    expect(tunnel).toMatch(/^HTTP\/1\.1 405 /);
    expect(JSON.parse(tunnel.slice(tunnel.indexOf('\r\n\r\n') + 4))).toMatchObject({
      id: null,
      error: { message: expect.stringContaining('CONNECT') },
    });
    expect(gateway.counts().refusals[GatewayRefusal.NOT_PROXIED]).toBe(2);
    expect(upstream.seen).toHaveLength(0);
  });

  it('sends a path that reads as another host (`//host/x`, `/\\host/x`) to its upstream, never to that host', async () => {
    const { upstream, gateway } = await rig((_req, res) => res.writeHead(200).end('upstream'));
    const other = await startScriptedUpstream((_req, res) => res.writeHead(200).end('other host'));
    try {
      const { host } = new URL(other.url);
      for (const target of [`//${host}/secret`, `/\\${host}/secret`]) {
        const answer = await rawExchange(
          gateway.url,
          `GET ${target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`,
        );
        expect(answer).toMatch(/^HTTP\/1\.1 200 /);
        expect(answer).toContain('upstream');
      }
      expect(other.seen).toHaveLength(0);
      expect(upstream.seen.map((s) => s.url)).toEqual([`//${host}/secret`, `//${host}/secret`]);
    } finally {
      await other.close();
    }
  });

  it('carries a real MCP SDK client session to the lab server: tools, a streamed call, the session ended', async () => {
    const lab = await startLabServer({ retryIntervalMs: 50 });
    const gateway = await startGateway(gatewayOptions(lab.url));
    const client = new Client({ name: 'transparency', version: '1.0.0' });
    try {
      const transport = new StreamableHTTPClientTransport(new URL(new URL(lab.url).pathname, gateway.url));
      await client.connect(transport);
      const tools = await client.listTools();
      expect(tools.tools.map((t) => t.name)).toContain('stream_progress');
      const progress: number[] = [];
      const result = await client.callTool({ name: 'stream_progress', arguments: { count: 3, delay: 5 } }, undefined, {
        onprogress: (p) => progress.push(p.progress),
      });
      expect(result.isError ?? false).toBe(false);
      expect(progress).toEqual([1, 2, 3]);
      const sessionId = transport.sessionId!;
      await transport.terminateSession();
      const log = lab.requestLog(sessionId);
      expect(log.some((e) => e.method === 'DELETE' && e.status === 200)).toBe(true);
      expect(log.filter((e) => e.method === 'POST').every((e) => e.status < 300)).toBe(true);
    } finally {
      await client.close();
      await gateway.close();
      await lab.close();
    }
  });
});
