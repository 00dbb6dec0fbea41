// The bytes real servers send that carry no event or are not plain text: a `: ping` keep-alive
// (sse-starlette, the Python SDK's server, pings every 15 s), and bodies in a Content-Encoding (Node's
// fetch, so the TypeScript SDK, sends `Accept-Encoding: gzip, deflate`, and compression middleware is
// common). Under --enforce nothing that carries no event is held, and an encoded stream is either asked
// for unencoded or passed as it comes; observing, a decoded copy is read, so an encoded result is seen
// (no false lost_result); what the gateway cannot read passes byte-identical, counted, and is not judged.
// "Early" is proven by order: the scripted upstream writes its next bytes only once the client has read
// what came before, so a gateway that held them would never finish.
import { Agent } from 'node:http';
import type { ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { brotliCompressSync, constants, createGzip, deflateSync, gunzipSync, gzipSync } from 'node:zlib';
import type { Gzip } from 'node:zlib';
import { FindingKind, LABEL_KIND, METRIC_GATEWAY_UNPARSED_TOTAL, UnparsedKind } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import type { RunningGateway } from '../src/index.js';
import { waitFor } from './helpers/e2e-rig.js';
import { open, send } from './helpers/raw-client.js';
import { rigPerTest } from './helpers/scripted-upstream.js';

const rig = rigPerTest();

/** What Node's fetch sends, and the MCP client's Accept. */
const fetchLike = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'accept-encoding': 'gzip, deflate',
};
const call = (id: number, name = 'x'): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name } });
const result = (id: number, text = 'done'): string =>
  JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } });
const elicitation = JSON.stringify({
  jsonrpc: '2.0',
  id: 'elicit-1',
  method: 'elicitation/create',
  params: { message: 'Continue?', requestedSchema: { type: 'object', properties: {} } },
});
const initializeResult = {
  protocolVersion: '2025-06-18',
  capabilities: {},
  serverInfo: { name: 'encoded', version: '1' },
};
const initialize = JSON.stringify({
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});
const sse = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

/** A gate the scripted upstream waits on: opened by the test once the client has read something. */
function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** A streaming gzip in front of an upstream's response: each `send` is flushed at once (as SSE compression must). */
function gzipStream(res: ServerResponse): { gz: Gzip; send(text: string): Promise<void> } {
  const gz = createGzip();
  gz.pipe(res);
  return { gz, send: (text) => new Promise<void>((resolve) => (gz.write(text), gz.flush(() => resolve()))) };
}

/** The client's decoded view of a gzip'd body read so far (the client decodes as fetch would). */
function gunzipped(bytes: Buffer): string {
  return gunzipSync(bytes, { finishFlush: constants.Z_SYNC_FLUSH }).toString();
}

/** Every request span ended (each with its result, or at its deadline), then the findings of the gateway's detector. */
async function findingsWhenSettled(gateway: RunningGateway): Promise<string[]> {
  await waitFor(() => gateway.stats().openRequests === 0 && gateway.counts().open === 0, 'every request to end');
  await gateway.flush();
  return gateway.detector!.findings().map((f) => f.kind);
}

describe('a `: ping` keep-alive under --enforce', () => {
  it('reaches the client before the upstream writes anything more, and the result after it', async () => {
    const pinged = gate();
    const { endpoint, upstream } = await rig(
      async (_req, res) => {
        res.writeHead(200, sse);
        res.write(': ping\n\n');
        // sse-starlette's form, with CRLF: written only once the client holds the first ping.
        await pinged.opened;
        res.write(': ping - 2026-12-04 00:00:15.000000+00:00\r\n\r\n');
        res.end(`id: r1\ndata: ${result(1)}\n\n`);
      },
      { enforce: true },
    );
    const exchange = await open(endpoint, { method: 'POST', headers: fetchLike, body: call(1) });
    await waitFor(() => exchange.text().includes(': ping\n\n'), 'the ping to reach the client');
    pinged.open();
    expect((await exchange.ended).complete).toBe(true);
    expect(exchange.text()).toBe(
      `: ping\n\n: ping - 2026-12-04 00:00:15.000000+00:00\r\n\r\nid: r1\ndata: ${result(1)}\n\n`,
    );
    expect(upstream.seen).toHaveLength(1);
  });
});

describe('a gzip-capable upstream under --enforce', () => {
  it('is asked for identity, and its first event (a request the client must answer) arrives before the rest is sent', async () => {
    const answered = gate();
    const { endpoint, upstream, gateway } = await rig(
      async (req, res) => {
        // As compression middleware does: gzip when the client accepts it.
        const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
        res.writeHead(200, { ...sse, ...(gzip ? { 'content-encoding': 'gzip' } : {}) });
        const out = gzip ? gzipStream(res) : { send: (t: string) => void res.write(t), gz: undefined };
        await out.send(`id: e1\ndata: ${elicitation}\n\n`);
        await answered.opened;
        await out.send(`id: r1\ndata: ${result(1)}\n\n`);
        if (out.gz) out.gz.end();
        else res.end();
      },
      { enforce: true },
    );
    const exchange = await open(endpoint, { method: 'POST', headers: fetchLike, body: call(1) });
    await waitFor(() => exchange.text().includes('elicitation/create'), 'the elicitation to reach the client');
    answered.open();
    expect((await exchange.ended).complete).toBe(true);
    expect(upstream.seen[0]!.headers['accept-encoding']).toBe('identity');
    expect(exchange.text()).toBe(`id: e1\ndata: ${elicitation}\n\nid: r1\ndata: ${result(1)}\n\n`);
    expect(exchange.res.headers['content-encoding']).toBeUndefined();
    expect(gateway.stats().unreadEncodedBodies).toBe(0);
  });

  it('that gzips all the same: its stream passes as it comes, byte-identical and unfiltered, counted', async () => {
    const answered = gate();
    const written: Buffer[] = [];
    const { endpoint, gateway } = await rig(
      async (_req, res) => {
        res.writeHead(200, { ...sse, 'content-encoding': 'gzip' });
        const gz = createGzip();
        gz.on('data', (chunk: Buffer) => written.push(chunk));
        gz.pipe(res);
        const send = (text: string) => new Promise<void>((resolve) => (gz.write(text), gz.flush(() => resolve())));
        await send(`id: e1\ndata: ${elicitation}\n\n`);
        await answered.opened;
        // A duplicate of the result: the gateway cannot remove it from a body it cannot filter.
        await send(`id: r1\ndata: ${result(1)}\n\nid: r2\ndata: ${result(1)}\n\n`);
        gz.end();
      },
      { enforce: true, requestTimeoutMs: 1_000 },
    );
    const exchange = await open(endpoint, { method: 'POST', headers: fetchLike, body: call(1) });
    await waitFor(
      () => gunzipped(exchange.received()).includes('elicitation/create'),
      'the elicitation to reach the client',
    );
    answered.open();
    expect((await exchange.ended).complete).toBe(true);
    expect(exchange.received().equals(Buffer.concat(written))).toBe(true);
    expect(gateway.stats().unreadEncodedBodies).toBe(1);
    expect(gateway.counts().actions).toEqual({});
    // Not judged: the result the gateway could not see is no lost_result.
    expect(await findingsWhenSettled(gateway)).not.toContain(FindingKind.LOST_RESULT);
  });
});

describe('encoded bodies, observing: a decoded copy is read, the client gets the upstream’s bytes', () => {
  const encoders = {
    gzip: (text: string) => gzipSync(text),
    deflate: (text: string) => deflateSync(text),
    br: (text: string) => brotliCompressSync(text),
  } as const;
  for (const [coding, encode] of Object.entries(encoders)) {
    for (const format of ['json', 'sse'] as const) {
      it(`${coding} ${format}: each result is seen (the request ends on it), no lost_result, bytes untouched`, async () => {
        const bodies = new Map<number, Buffer>();
        const { endpoint, gateway } = await rig((_req, res, seen) => {
          const { id, method } = JSON.parse(seen.body.toString()) as { id: number; method: string };
          if (method === 'initialize') {
            // The session, its initialize result encoded too.
            res.writeHead(200, {
              'content-type': 'application/json',
              'content-encoding': coding,
              'mcp-session-id': 's-1',
            });
            return res.end(encode(JSON.stringify({ jsonrpc: '2.0', id, result: initializeResult })));
          }
          const text =
            format === 'json'
              ? result(id)
              : // A duplicate of the result on the stream: a finding the gateway can give only by decoding.
                `: ping\n\nid: ${id}-1\ndata: ${result(id)}\n\nid: ${id}-2\ndata: ${result(id)}\n\n`;
          const body = encode(text);
          bodies.set(id, body);
          // Written in two pieces, split mid-stream.
          res.writeHead(200, {
            'content-type': format === 'json' ? 'application/json' : 'text/event-stream',
            'content-encoding': coding,
          });
          res.write(body.subarray(0, 7));
          res.end(body.subarray(7));
        });
        const init = await send(endpoint, { method: 'POST', headers: fetchLike, body: initialize });
        expect(init.headers['mcp-session-id']).toBe('s-1');
        for (const id of [1, 2]) {
          const headers = { ...fetchLike, 'mcp-session-id': 's-1' };
          const response = await send(endpoint, { method: 'POST', headers, body: call(id) });
          expect(response.status).toBe(200);
          expect(response.headers['content-encoding']).toBe(coding);
          expect(response.body.equals(bodies.get(id)!)).toBe(true);
        }
        // Each body's end observed, after its decoded copy (its records leave once their stream ended after their results).
        await waitFor(() => gateway.stats().requests === 0, 'each stream’s end to be observed');
        const findings = await findingsWhenSettled(gateway);
        expect(findings).not.toContain(FindingKind.LOST_RESULT);
        if (format === 'sse') expect(findings).toContain(FindingKind.DUPLICATE_TERMINAL);
        expect(gateway.stats()).toMatchObject({ unreadEncodedBodies: 0, heldBytes: 0 });
      });
    }
  }

  it('an empty body that names a coding is no unreadable body', async () => {
    const { endpoint, gateway } = await rig((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end();
    });
    const response = await send(endpoint, { method: 'POST', headers: fetchLike, body: call(1) });
    expect([response.status, response.body.length]).toEqual([200, 0]);
    await waitFor(() => gateway.counts().open === 0, 'the exchange to end');
    expect(gateway.stats()).toMatchObject({ unreadEncodedBodies: 0, heldBytes: 0 });
  });

  it('an SSE result split across chunks of a gzip stream is seen before the stream ends', async () => {
    const seenResult = gate();
    const { endpoint, gateway } = await rig(async (_req, res) => {
      res.writeHead(200, { ...sse, 'content-encoding': 'gzip' });
      const out = gzipStream(res);
      await out.send(`id: r1\ndata: ${result(1)}\n\n`);
      // The stream stays open until the gateway has seen the result through its decoded copy.
      await seenResult.opened;
      out.gz.end();
    });
    const exchange = await open(endpoint, { method: 'POST', headers: fetchLike, body: call(1) });
    await waitFor(() => gateway.stats().openRequests === 0, 'the request to end on its result');
    seenResult.open();
    expect((await exchange.ended).complete).toBe(true);
    expect(await findingsWhenSettled(gateway)).not.toContain(FindingKind.LOST_RESULT);
  });
});

describe('what the gateway cannot read passes byte-identical, counted, never judged', () => {
  const cases: [string, string, () => Buffer][] = [
    ['an unknown coding', 'x-made-up', () => Buffer.from(`\u0000\u0001${result(1)}`)],
    ['zstd', 'zstd', () => Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3, 4])],
    ['stacked codings', 'deflate, gzip', () => gzipSync(deflateSync(result(1)))],
    [
      'corrupt gzip',
      'gzip',
      () => Buffer.concat([gzipSync(result(1)).subarray(0, 12), Buffer.from('not gzip at all')]),
    ],
    ['a truncated gzip', 'gzip', () => gzipSync(result(1)).subarray(0, 20)],
  ];
  for (const [what, coding, body] of cases) {
    it(`${what} (${coding})`, async () => {
      const bytes = body();
      const { endpoint, gateway } = await rig(
        (_req, res) =>
          void res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': coding }).end(bytes),
        { requestTimeoutMs: 1_000 },
      );
      const response = await send(endpoint, { method: 'POST', headers: fetchLike, body: call(1) });
      expect(response.body.equals(bytes)).toBe(true);
      expect(response.headers['content-encoding']).toBe(coding);
      await waitFor(() => gateway.stats().unreadEncodedBodies === 1, 'the body to be counted');
      const metrics = await (await fetch(`http://127.0.0.1:${gateway.detector!.metricsPort}/metrics`)).text();
      expect(metrics).toContain(`${METRIC_GATEWAY_UNPARSED_TOTAL}{${LABEL_KIND}="${UnparsedKind.ENCODED_BODY}"} 1`);
      // The request ends at its deadline (nothing told its result), and no lost_result is reported for it.
      expect(await findingsWhenSettled(gateway)).not.toContain(FindingKind.LOST_RESULT);
      expect(gateway.stats().heldBytes).toBe(0);
    });
  }

  it('a decoder past --max-held-bytes: the body passes byte-identical, counted', async () => {
    const body = gzipSync(result(1));
    const { endpoint, gateway } = await rig(
      (_req, res) =>
        void res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(body),
      // Room for the body, none for a decoder's state.
      { maxHeldBytes: 16 * 1024, requestTimeoutMs: 1_000 },
    );
    const response = await send(endpoint, { method: 'POST', headers: fetchLike, body: call(1) });
    expect(response.body.equals(body)).toBe(true);
    await waitFor(() => gateway.stats().unreadEncodedBodies === 1, 'the body to be counted');
    expect(await findingsWhenSettled(gateway)).not.toContain(FindingKind.LOST_RESULT);
    expect(gateway.stats().heldBytes).toBe(0);
  });

  it('a gzip bomb: cut off from observation and counted; the client gets every byte', async () => {
    // 64 MiB of one byte, some 64 KiB encoded, as the body of a JSON answer.
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20));
    const { endpoint, gateway } = await rig(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        for (let at = 0; at < bomb.length; at += 4096) res.write(bomb.subarray(at, at + 4096));
        res.end();
      },
      { requestTimeoutMs: 1_000 },
    );
    const response = await send(endpoint, { method: 'POST', headers: fetchLike, body: call(1) });
    expect(response.body.equals(bomb)).toBe(true);
    await waitFor(() => gateway.stats().unreadEncodedBodies === 1, 'the bomb to be counted');
    expect(gateway.stats()).toMatchObject({ heldBytes: 0, unparsedJsonBodies: 0 });
    expect(await findingsWhenSettled(gateway)).not.toContain(FindingKind.LOST_RESULT);
  });
});

/** The SDK 1.x client's own SSE parser (eventsource-parser, through its `EventSourceParserStream`), from the SDK's dependencies. */
const sdkRequire = createRequire(
  createRequire(import.meta.url).resolve('@modelcontextprotocol/sdk/client/streamableHttp.js'),
);
const { EventSourceParserStream } = sdkRequire('eventsource-parser/stream') as {
  EventSourceParserStream: new () => TransformStream<string, { id?: string; event?: string; data: string }>;
};

/** The events the SDK's client reads from these chunks, as its transport pipes a body (decoded text, then the parser). */
async function sdkEvents(chunks: readonly Buffer[]): Promise<{ id?: string; data: string }[]> {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new Uint8Array(chunk));
      controller.close();
    },
  });
  const events: { id?: string; data: string }[] = [];
  const reader = body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read())
    events.push({ id: r.value.id, data: r.value.data });
  return events;
}

describe('suspicion: an event ending in a lone CR at a chunk boundary (eventsource-parser waits for a possible LF)', () => {
  it('confirmed and fixed: the LF after it passes even when the duplicate after it is removed, so the SDK client reads the event', async () => {
    const progress = JSON.stringify({
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: { level: 'info', data: 'x' },
    });
    // The event's blank line is a lone CR, the last byte of a chunk; its LF comes first in the next
    // chunk, with a replayed duplicate of call 1's result that the guard removes.
    const chunkA = Buffer.from(`id: n1\ndata: ${progress}\n\r`);
    const chunkB = Buffer.from(`\nid: d1\ndata: ${result(1)}\n\n`);
    const clientHasA = gate();
    const { endpoint, gateway } = await rig(
      async (req, res, seen) => {
        if (req.method === 'GET') {
          res.writeHead(200, sse);
          res.write(chunkA);
          await clientHasA.opened;
          res.end(chunkB);
          return;
        }
        const { id, method } = JSON.parse(seen.body.toString()) as { id?: number; method: string };
        if (method === 'initialize') {
          res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's-1' });
          return res.end(JSON.stringify({ jsonrpc: '2.0', id, result: initializeResult }));
        }
        if (id === undefined) return res.writeHead(202).end();
        res.writeHead(200, sse);
        res.end(`id: r1\ndata: ${result(id)}\n\n`);
      },
      // A client talking to the gateway directly: its next request on the connection proves receipt.
      { enforce: true, connectionProof: true },
    );
    // One connection: the notification after the call proves its client read the call's result.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const session = { ...fetchLike, 'mcp-session-id': 's-1' };
      await send(endpoint, { method: 'POST', headers: fetchLike, body: initialize, agent });
      expect(
        (await send(endpoint, { method: 'POST', headers: session, body: call(1), agent })).body.toString(),
      ).toContain('"id":1');
      const initialized = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' });
      expect((await send(endpoint, { method: 'POST', headers: session, body: initialized, agent })).status).toBe(202);
    } finally {
      agent.destroy();
    }
    const listening = await open(endpoint, { headers: { accept: 'text/event-stream', 'mcp-session-id': 's-1' } });
    await waitFor(() => listening.received().length === chunkA.length, 'the first chunk to reach the client');
    clientHasA.open();
    expect((await listening.ended).complete).toBe(true);
    expect(gateway.counts().actions).toMatchObject({ duplicate_terminal_dropped: 1 });
    // What the SDK's parser reads directly, less the removed duplicate, is what it reads through the gateway.
    const direct = await sdkEvents([chunkA, chunkB]);
    expect(direct.map((e) => e.id)).toEqual(['n1', 'd1']);
    expect(await sdkEvents([listening.received()])).toEqual(direct.filter((e) => e.id !== 'd1'));
  });
});
