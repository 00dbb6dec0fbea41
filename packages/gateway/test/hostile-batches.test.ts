// What one request body can make the gateway hold, and what it does with requests it can never see
// answered. A batch is bounded in messages (--max-batch-messages): past it, the body and its response
// go through unobserved and counted, so a 4 MiB body of tiny requests makes no 55,000 records, spans
// and deadline timers. A request refused with a status (401, 403, ...) is answered, not open: its
// record leaves at once, and no finding is made of it.
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import type { ServerResponse } from 'node:http';
import { GatewayRefusal, LABEL_KIND, METRIC_GATEWAY_UNPARSED_TOTAL, UnparsedKind } from '@resumewatch/semconv';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { send } from './helpers/raw-client.js';
import { gatewayOptions, rigPerTest } from './helpers/scripted-upstream.js';
import { batchOver } from '../src/batch-size.js';
import { RateLimitedLog } from '../src/error-log.js';
import { startGateway } from '../src/index.js';

const rig = rigPerTest();
const closing: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const part of closing.splice(0).reverse()) await part.close();
});

const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** A batch of `n` tiny requests (`{"jsonrpc":"2.0","id":i,"method":"ping"}`), about 40 bytes each. */
function batch(n: number): Buffer {
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(`{"jsonrpc":"2.0","id":${i},"method":"ping"}`);
  return Buffer.from(`[${parts.join(',')}]`);
}

/** The JSON batch of results for `n` requests, as the upstream answers `batch(n)`. */
function results(n: number): string {
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(`{"jsonrpc":"2.0","id":${i},"result":{}}`);
  return `[${parts.join(',')}]`;
}

async function metricsOf(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

describe('a batch of more messages than the gateway observes', () => {
  it('55,000 requests in one 2.2 MB POST make no record, span or timer; forwarded byte for byte, the response too, counted', async () => {
    // The upstream holds its answer until the test has counted what the gateway holds meanwhile.
    const held: ServerResponse[] = [];
    const { upstream, gateway, endpoint } = await rig((_req, res) => void held.push(res));
    const count = 55_000;
    const body = batch(count);
    const answer = send(endpoint, { method: 'POST', headers: json, body });
    await vi.waitFor(() => expect(held).toHaveLength(1), { timeout: 20_000 });
    expect(upstream.seen[0]!.body.equals(body)).toBe(true);
    // Before the upstream answers: nothing per message. Today's main held 55,000 of each here.
    expect(gateway.stats()).toMatchObject({ requests: 0, openRequests: 0, pendingHttp: 0 });
    const reply = results(count);
    held[0]!.writeHead(200, { 'content-type': 'application/json' }).end(reply);
    const response = await answer;
    expect(response.status).toBe(200);
    expect(response.body.toString()).toBe(reply);
    expect(gateway.counts().unobservedBatches).toBe(1);
    expect(gateway.stats()).toMatchObject({ requests: 0, openRequests: 0, heldBytes: 0, unparsedJsonBodies: 0 });
    // The response's 55,000 results, of requests the gateway never recorded, are no finding.
    await gateway.flush();
    expect(gateway.detector!.findings()).toEqual([]);
    const metrics = await metricsOf(gateway.detector!.metricsPort);
    expect(metrics).toContain(`${METRIC_GATEWAY_UNPARSED_TOTAL}{${LABEL_KIND}="${UnparsedKind.REQUEST_BATCH}"} 1`);
  });

  it('a batch at the cap is observed, one over it is not (--max-batch-messages)', async () => {
    const held: ServerResponse[] = [];
    const { gateway, endpoint } = await rig((_req, res) => void held.push(res), { maxBatchMessages: 10 });
    const at = send(endpoint, { method: 'POST', headers: { ...json, 'mcp-session-id': 'a' }, body: batch(10) });
    await vi.waitFor(() => expect(held).toHaveLength(1), { timeout: 10_000 });
    // Observed: a record and an open span (with its deadline's timer) per request.
    expect(gateway.stats()).toMatchObject({ requests: 10, openRequests: 10 });
    const over = send(endpoint, { method: 'POST', headers: { ...json, 'mcp-session-id': 'b' }, body: batch(11) });
    await vi.waitFor(() => expect(held).toHaveLength(2), { timeout: 10_000 });
    expect(gateway.stats()).toMatchObject({ requests: 10, openRequests: 10 });
    expect(gateway.counts().unobservedBatches).toBe(1);
    held[0]!.writeHead(200, { 'content-type': 'application/json' }).end(results(10));
    held[1]!.writeHead(200, { 'content-type': 'application/json' }).end(results(11));
    expect((await at).status).toBe(200);
    expect((await over).status).toBe(200);
    await vi.waitFor(() => expect(gateway.stats()).toMatchObject({ openRequests: 0 }), { timeout: 10_000 });
  });
});

describe('the count of a batch’s messages', () => {
  it('counts the elements of the top-level array only, outside strings, and stops past the cap', () => {
    const over = (text: string, cap: number) => batchOver(Buffer.from(text), cap);
    expect(over('[1,2,3]', 2)).toBe(true);
    expect(over('[1,2,3]', 3)).toBe(false);
    expect(over('[]', 0)).toBe(false);
    expect(over('{"a":[1,2,3,4]}', 1)).toBe(false);
    // Commas and brackets inside strings, escaped quotes, nested arrays and objects are no elements.
    expect(over('[{"a":"x,y,]\\",z"},[1,2,3],{"b":{"c":[4,5]}}]', 3)).toBe(false);
    expect(over('[{"a":"x,y,]\\",z"},[1,2,3],{"b":{"c":[4,5]}}]', 2)).toBe(true);
    // A byte order mark and white space before the array.
    expect(over('\ufeff \n\t[1,2]', 1)).toBe(true);
    // Not an array, or not JSON: not a batch.
    expect(over('"[1,2,3]"', 1)).toBe(false);
    expect(over('', 1)).toBe(false);
    // A body cut short is counted as far as it goes.
    expect(over('[1,2,3', 2)).toBe(true);
    // 10,000 levels of nesting: a loop, no stack.
    expect(over(`[${'['.repeat(10_000)}${']'.repeat(10_000)},1]`, 1)).toBe(true);
  });
});

describe('a request the upstream refuses with a status', () => {
  it.each([401, 403, 429, 503])(
    'is answered, not open (%i): its record leaves at once, its span ends, and no finding is made',
    async (status) => {
      const { gateway, endpoint } = await rig((_req, res) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end('{"error":"refused"}'),
      );
      for (const [i, headers] of [
        { ...json, 'mcp-session-id': 's' },
        json,
        { ...json, 'mcp-protocol-version': '2026-07-28' },
      ].entries()) {
        const response = await send(endpoint, {
          method: 'POST',
          headers,
          body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'x', arguments: {} } }),
        });
        expect(response.status).toBe(status);
      }
      // Today's main kept each record as an open request until its retention (10 minutes).
      expect(gateway.stats()).toMatchObject({ requests: 0, openRequests: 0 });
      await gateway.flush();
      expect(gateway.detector!.findings()).toEqual([]);
    },
  );

  it('with a JSON-RPC error in its body (the twin): released as well, and no finding is made', async () => {
    const { gateway, endpoint } = await rig((_req, res) =>
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end('{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}'),
    );
    const response = await send(endpoint, {
      method: 'POST',
      headers: { ...json, 'mcp-session-id': 's' },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}',
    });
    expect(response.status).toBe(400);
    expect(gateway.stats()).toMatchObject({ requests: 0, openRequests: 0 });
    await gateway.flush();
    expect(gateway.detector!.findings()).toEqual([]);
  });
});

describe('the internal_error line on stderr', () => {
  it('is rate-limited (10 an interval) while every internal error is counted', async () => {
    // A status below 100 parses, but Node's server refuses to send it: each exchange fails in the gateway.
    const sockets = new Set<Socket>();
    const server = createTcpServer((socket) => {
      sockets.add(socket);
      socket.on('data', () => socket.write('HTTP/1.1 099 Odd\r\ncontent-length: 2\r\n\r\nhi'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closing.push({
      close: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          for (const socket of sockets) socket.destroy();
        }),
    });
    const gateway = await startGateway(
      gatewayOptions(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`),
    );
    closing.push(gateway);
    const endpoint = new URL('/mcp', gateway.url).href;
    const lines: string[] = [];
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      const errors = 25;
      for (let i = 0; i < errors; i++) {
        const response = await send(endpoint, {
          method: 'POST',
          headers: json,
          body: `{"jsonrpc":"2.0","id":${i},"method":"ping"}`,
        });
        expect(response.status).toBe(502);
      }
      expect(gateway.counts().refusals[GatewayRefusal.INTERNAL_ERROR]).toBe(errors);
      // Today's main wrote 25.
      expect(lines.filter((line) => line.startsWith('resumewatch gateway: internal error:'))).toHaveLength(10);
    } finally {
      stderr.mockRestore();
    }
  });

  it('says at the interval’s end how many lines it left out, and starts again in the next', () => {
    vi.useFakeTimers();
    try {
      const written: string[] = [];
      const log = new RateLimitedLog(
        (line) => written.push(line),
        'internal error lines',
        3,
        60_000,
        () => Date.now(),
      );
      for (let i = 0; i < 8; i++) log.line(`error ${i}\n`);
      expect(written).toEqual(['error 0\n', 'error 1\n', 'error 2\n']);
      vi.advanceTimersByTime(60_000);
      expect(written).toHaveLength(4);
      expect(written[3]).toMatch(/^resumewatch gateway: 5 more internal error lines left out in 60 s/);
      log.line('error 8\n');
      log.line('error 9\n');
      expect(written.slice(4)).toEqual(['error 8\n', 'error 9\n']);
      // Nothing left out in this interval: no summary.
      vi.advanceTimersByTime(120_000);
      expect(written).toHaveLength(6);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('an upstream error after the response', () => {
  it('is counted, never thrown: an upstream resets the connection while the request body is still being sent', async () => {
    // An upstream that answers an SSE stream at once, reads none of the body, then resets the connection.
    const sockets = new Set<Socket>();
    const server = createTcpServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.once('data', () => {
        socket.pause();
        const event = 'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\n';
        socket.write(
          'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n' +
            `${Buffer.byteLength(event).toString(16)}\r\n${event}\r\n`,
          () => setTimeout(() => socket.resetAndDestroy(), 50),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closing.push({
      close: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          for (const socket of sockets) socket.destroy();
        }),
    });
    const gateway = await startGateway(
      gatewayOptions(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, { maxBodyBytes: 16 << 20 }),
    );
    closing.push(gateway);
    const body = Buffer.from(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'x', arguments: { blob: 'b'.repeat(8 << 20) } },
      }),
    );
    const response = await send(new URL('/mcp', gateway.url).href, { method: 'POST', headers: json, body });
    expect(response.status).toBe(200);
    expect(response.complete).toBe(false);
    await vi.waitFor(() => expect(gateway.counts()).toMatchObject({ lateUpstreamErrors: 1, open: 0 }), {
      timeout: 10_000,
    });
  });
});
