import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { GatewayErrorCode, GatewayRefusal, ROUTE_FINDINGS, ROUTE_PAGE_DATA } from '@resumewatch/semconv';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startGateway } from '../src/index.js';
import type { GatewayOptions, RunningGateway } from '../src/index.js';
import { headerLines, send } from './helpers/raw-client.js';
import { gatewayOptions } from './helpers/scripted-upstream.js';

/*
 * A real MCP SDK server protected against DNS rebinding (`createMcpExpressApp` on 127.0.0.1 applies the
 * SDK's `localhostHostValidation`) behind the gateway. A page on attacker.example whose name is re-pointed
 * at 127.0.0.1 sends `Host: attacker.example`: the server refuses it, and the gateway must not launder
 * it into the upstream's own name. Every client sends to 127.0.0.1; only the Host header says otherwise.
 */

interface GuardedServer {
  /** The MCP endpoint, `http://127.0.0.1:<port>/mcp`. */
  url: string;
  /** Times the tool ran. */
  runs(): number;
  /** Each request that passed the SDK's Host validation: its raw header lines. */
  seen: string[][];
  close(): Promise<void>;
}

async function startGuardedServer(): Promise<GuardedServer> {
  let runs = 0;
  const seen: string[][] = [];
  const app = createMcpExpressApp({ host: '127.0.0.1' });
  app.use((req: IncomingMessage, _res: ServerResponse, next: () => void) => {
    seen.push(req.rawHeaders);
    next();
  });
  // Stateless: one server and transport per request, JSON answers.
  // express's own types are not in the workspace: its request is node's, with the parsed JSON body.
  app.post('/mcp', async (req: IncomingMessage & { body?: unknown }, res: ServerResponse) => {
    const server = new McpServer({ name: 'guarded', version: '1.0.0' });
    server.registerTool('touch', { description: 'a side effect a rebound page must not cause' }, () => {
      runs++;
      return { content: [{ type: 'text', text: 'touched' }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  const http: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    runs: () => runs,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}

const CALL = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'touch', arguments: {} } });

/** POSTs the tool call to `url` (on 127.0.0.1) with the given Host and more headers. */
function callTool(url: string, headers: Record<string, string>) {
  return send(url, {
    method: 'POST',
    headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json', ...headers },
    body: CALL,
  });
}

function errorOf(body: Buffer): { id: unknown; error: { code: number; message: string } } {
  return JSON.parse(body.toString('utf8')) as { id: unknown; error: { code: number; message: string } };
}

describe('Host and Origin through the gateway, in front of an SDK server with DNS rebinding protection', () => {
  let upstream: GuardedServer;
  const gateways: RunningGateway[] = [];
  beforeAll(async () => {
    upstream = await startGuardedServer();
  });
  afterAll(() => upstream.close());
  afterEach(async () => {
    for (const g of gateways.splice(0)) await g.close();
  });

  async function gatewayWith(options: Partial<GatewayOptions> = {}): Promise<{ gateway: RunningGateway; url: string }> {
    const gateway = await startGateway(gatewayOptions(upstream.url, options));
    gateways.push(gateway);
    return { gateway, url: new URL('/mcp', gateway.url).href };
  }

  it('the SDK server itself refuses Host: attacker.example and runs the tool for its own name', async () => {
    const before = upstream.runs();
    const direct = await callTool(upstream.url, { host: 'attacker.example' });
    expect(direct.status).toBe(403);
    expect(upstream.runs()).toBe(before);
    const own = await callTool(upstream.url, { host: new URL(upstream.url).host });
    expect(own.status).toBe(200);
    expect(upstream.runs()).toBe(before + 1);
  });

  it('refuses Host: attacker.example with 403 and a JSON-RPC error, counted; the tool never runs', async () => {
    const { gateway, url } = await gatewayWith();
    const before = upstream.runs();
    const seen = upstream.seen.length;
    for (const host of ['attacker.example', `attacker.example:${gateway.port}`, 'localhost.attacker.example']) {
      const res = await callTool(url, { host });
      expect(res.status, host).toBe(403);
      expect(res.headers['content-type']).toBe('application/json');
      const body = errorOf(res.body);
      expect(body.id).toBeNull();
      expect(body.error.code).toBe(GatewayErrorCode.UNAVAILABLE);
      expect(body.error.message).toBe(
        `resumewatch gateway: Host ${JSON.stringify(host)} is not allowed (--allowed-hosts)`,
      );
    }
    expect(upstream.runs()).toBe(before);
    expect(upstream.seen.length, 'requests that reached the upstream').toBe(seen);
    expect(gateway.counts().refusals[GatewayRefusal.HOST_NOT_ALLOWED]).toBe(3);
  });

  it('forwards the loopback names, with or without a port; the SDK client works unchanged', async () => {
    const { gateway, url } = await gatewayWith();
    const before = upstream.runs();
    const hosts = [
      '127.0.0.1',
      `127.0.0.1:${gateway.port}`,
      `localhost:${gateway.port}`,
      'localhost',
      '[::1]',
      `[::1]:${gateway.port}`,
    ];
    for (const host of hosts) expect((await callTool(url, { host })).status, host).toBe(200);
    expect(upstream.runs()).toBe(before + hosts.length);

    const client = new Client({ name: 'hostile-host', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    try {
      const result = await client.callTool({ name: 'touch', arguments: {} });
      expect(result.content).toEqual([{ type: 'text', text: 'touched' }]);
    } finally {
      await client.close();
    }
    expect(gateway.counts().refusals).toEqual({});
  });

  it('refuses a foreign Origin (403, counted) and forwards a loopback one', async () => {
    const { gateway, url } = await gatewayWith();
    const host = `127.0.0.1:${gateway.port}`;
    const before = upstream.runs();
    for (const origin of [
      'http://attacker.example',
      `http://attacker.example:${gateway.port}`,
      'null',
      'https://127.0.0.1.attacker.example',
    ]) {
      const res = await callTool(url, { host, origin });
      expect(res.status, origin).toBe(403);
      expect(errorOf(res.body).error.message).toBe(
        `resumewatch gateway: Origin ${JSON.stringify(origin)} is not allowed (--allowed-origins)`,
      );
    }
    expect(upstream.runs()).toBe(before);
    expect(gateway.counts().refusals[GatewayRefusal.ORIGIN_NOT_ALLOWED]).toBe(4);
    // A local tool's page (another loopback port) and the gateway's own origin pass.
    for (const origin of ['http://localhost:6274', `http://${host}`, 'http://[::1]'])
      expect((await callTool(url, { host, origin })).status, origin).toBe(200);
    expect(upstream.runs()).toBe(before + 3);
  });

  it('--allowed-hosts replaces the loopback names; --allowed-origins names the cross-origin callers', async () => {
    const { gateway, url } = await gatewayWith({
      allowedHosts: ['mcp.example.com', 'internal.example:9000'],
      allowedOrigins: ['https://app.example.com'],
    });
    const before = upstream.runs();
    const allowed: Record<string, string>[] = [
      { host: 'mcp.example.com' },
      { host: 'MCP.example.com:443' },
      { host: 'internal.example:9000' },
      { host: 'mcp.example.com', origin: 'https://app.example.com' },
      // Its own origin is never cross-site.
      { host: 'mcp.example.com', origin: 'https://mcp.example.com' },
    ];
    for (const headers of allowed) expect((await callTool(url, headers)).status, JSON.stringify(headers)).toBe(200);
    expect(upstream.runs()).toBe(before + allowed.length);
    const refused: [Record<string, string>, GatewayRefusal][] = [
      [{ host: `127.0.0.1:${gateway.port}` }, GatewayRefusal.HOST_NOT_ALLOWED],
      [{ host: 'internal.example:9001' }, GatewayRefusal.HOST_NOT_ALLOWED],
      [{ host: 'attacker.example' }, GatewayRefusal.HOST_NOT_ALLOWED],
      [{ host: 'mcp.example.com', origin: 'https://other.example.com' }, GatewayRefusal.ORIGIN_NOT_ALLOWED],
      [{ host: 'mcp.example.com', origin: 'http://app.example.com' }, GatewayRefusal.ORIGIN_NOT_ALLOWED],
    ];
    for (const [headers] of refused) expect((await callTool(url, headers)).status, JSON.stringify(headers)).toBe(403);
    expect(upstream.runs()).toBe(before + allowed.length);
    expect(gateway.counts().refusals).toEqual({
      [GatewayRefusal.HOST_NOT_ALLOWED]: 3,
      [GatewayRefusal.ORIGIN_NOT_ALLOWED]: 2,
    });
  });

  it("tells the upstream the client's Host in X-Forwarded-Host and Forwarded, replacing the client's own", async () => {
    const { gateway, url } = await gatewayWith({ allowedHosts: ['mcp.example.com'] });
    upstream.seen.length = 0;
    const res = await callTool(url, {
      host: 'mcp.example.com:8443',
      forwarded: 'for=203.0.113.9;host=attacker.example;proto=https',
      'x-forwarded-host': 'attacker.example',
      'x-forwarded-for': '203.0.113.9',
      'x-forwarded-proto': 'https',
    });
    expect(res.status).toBe(200);
    const [raw] = upstream.seen;
    expect(headerLines(raw!, 'host')).toEqual([new URL(upstream.url).host]);
    expect(headerLines(raw!, 'x-forwarded-host')).toEqual(['mcp.example.com:8443']);
    expect(headerLines(raw!, 'forwarded')).toEqual(['host="mcp.example.com:8443";proto=http;for=127.0.0.1']);
    expect(headerLines(raw!, 'x-forwarded-proto')).toEqual(['http']);
    expect(headerLines(raw!, 'x-forwarded-for')).toEqual(['127.0.0.1']);
    expect(gateway.counts().refusals).toEqual({});
  });

  it("refuses a rebound Host on the gateway's metrics port: /page.json and /findings", async () => {
    const { gateway } = await gatewayWith({ detector: { config: { metricsPort: 0 }, output: null } });
    const metrics = `http://127.0.0.1:${gateway.detector!.metricsPort}`;
    for (const path of [ROUTE_PAGE_DATA, ROUTE_FINDINGS]) {
      const rebound = await send(metrics + path, { headers: { host: 'attacker.example' } });
      expect(rebound.status, path).toBe(403);
      expect(rebound.body.toString('utf8')).toBe('Host "attacker.example" is not allowed (--allowed-hosts)\n');
      expect(
        (await send(metrics + path, { headers: { host: `localhost:${gateway.detector!.metricsPort}` } })).status,
      ).toBe(200);
    }
  });
});
