// --sse-heartbeat on real parts over loopback: an idle-cutting proxy (as a load balancer's idle timeout)
// between a client and the gateway cuts a quiet listening stream without the heartbeat and not with it;
// the SDK 1.x and v2 clients, eventsource-parser and the EventSource client (eventsource) read the same
// messages with it as without; and a comment is never written inside an event the upstream sends in two
// chunks far apart. Durations are small (100-600 ms); nothing asserts a wall time: a stream's life is
// proven by the bytes and events that reach its client, the heartbeats counted, and its close (or none).
import { get, type IncomingMessage, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { connectSdkSession, startLabServer, type SdkClientKind } from '@resumewatch/lab';
import { METRIC_GATEWAY_SSE_HEARTBEATS_TOTAL } from '@resumewatch/semconv';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../src/index.js';
import { gatewayMcpUrl, startTestGateway, waitFor } from './helpers/e2e-rig.js';
import { rigPerTest } from './helpers/scripted-upstream.js';

const rig = rigPerTest();
const HEARTBEAT_MS = 100;
/** The idle-cutting proxy's timeout: six heartbeat intervals, room for a busy machine's event loop. */
const IDLE_CUT_MS = 600;
const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

const sdkRequire = createRequire(
  createRequire(import.meta.url).resolve('@modelcontextprotocol/sdk/client/streamableHttp.js'),
);
const { EventSourceParserStream } = sdkRequire('eventsource-parser/stream') as {
  EventSourceParserStream: new () => TransformStream<string, { id?: string; event?: string; data: string }>;
};
const { EventSource } = sdkRequire('eventsource') as {
  EventSource: new (url: string) => {
    onmessage: ((e: { data: string; lastEventId: string; type: string }) => void) | null;
    onerror: (() => void) | null;
    close(): void;
  };
};

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * A TCP proxy that, like a load balancer's idle timeout, destroys a connection after `idleMs` with no
 * byte from the server's side.
 */
async function startIdleCuttingProxy(target: string, idleMs: number): Promise<{ url: string; cuts: () => number }> {
  const { hostname, port } = new URL(target);
  let cuts = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    const cut = (): void => {
      cuts++;
      client.destroy();
      upstream.destroy();
    };
    const timer = setTimeout(cut, idleMs);
    upstream.on('data', () => timer.refresh());
    client.pipe(upstream);
    upstream.pipe(client);
    const end = (): void => {
      clearTimeout(timer);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  const url = new URL(target);
  url.port = String((server.address() as AddressInfo).port);
  return { url: url.href, cuts: () => cuts };
}

/** A listening GET read raw: every byte, and whether the response closed (and how). */
function listen(url: string): { text: () => string; closed: () => boolean; complete: () => boolean; stop: () => void } {
  const chunks: Buffer[] = [];
  let closed = false;
  let complete = false;
  const req = get(
    url,
    { headers: { accept: 'text/event-stream', 'mcp-session-id': 's-1' } },
    (res: IncomingMessage) => {
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => (complete = true));
      res.on('close', () => (closed = true));
      res.on('error', () => undefined);
    },
  );
  req.on('error', () => (closed = true));
  cleanups.push(() => req.destroy());
  return {
    text: () => Buffer.concat(chunks).toString('utf8'),
    closed: () => closed,
    complete: () => complete,
    stop: () => req.destroy(),
  };
}

/** The events eventsource-parser (the SDK 1.x client's parser) reads from a body's text. */
async function parsedEvents(text: string): Promise<{ id?: string; event?: string; data: string }[]> {
  const body = new ReadableStream<string>({
    start(controller) {
      controller.enqueue(text);
      controller.close();
    },
  });
  const events: { id?: string; event?: string; data: string }[] = [];
  const reader = body.pipeThrough(new EventSourceParserStream()).getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read())
    events.push({ ...(r.value.id !== undefined ? { id: r.value.id } : {}), event: r.value.event, data: r.value.data });
  return events;
}

const message = (n: number): string =>
  JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { n } });

describe('an idle-cutting proxy between the client and the gateway', () => {
  /** A listening stream that sends one event, then is quiet until `second` is called. */
  async function quietStream(options: { sseHeartbeatMs?: number }) {
    let res: ServerResponse | undefined;
    const r = await rig((_req, response) => {
      res = response;
      response.writeHead(200, SSE_HEADERS);
      response.write(`id: 1\ndata: ${message(1)}\n\n`);
    }, options);
    const proxy = await startIdleCuttingProxy(r.endpoint, IDLE_CUT_MS);
    const client = listen(proxy.url);
    await waitFor(() => client.text().includes('id: 1'), 'the first event');
    return { r, proxy, client, second: () => res!.write(`id: 2\ndata: ${message(2)}\n\n`) };
  }

  it('cuts a quiet listening stream without the heartbeat', async () => {
    const { r, proxy, client } = await quietStream({});
    await waitFor(() => client.closed(), 'the proxy to cut the quiet stream');
    expect(proxy.cuts()).toBe(1);
    expect(client.complete()).toBe(false);
    expect(r.gateway.counts().heartbeats).toBe(0);
    expect(client.text()).not.toContain(': heartbeat');
  });

  it('does not cut it with --sse-heartbeat: the stream lives past several idle timeouts and carries the next event', async () => {
    const { r, proxy, client, second } = await quietStream({ sseHeartbeatMs: HEARTBEAT_MS });
    // Heartbeats for three of the proxy's idle timeouts, and more.
    await waitFor(
      () => r.gateway.counts().heartbeats >= (3 * IDLE_CUT_MS) / HEARTBEAT_MS + 1,
      'heartbeats past three idle timeouts',
    );
    expect(client.closed()).toBe(false);
    expect(proxy.cuts()).toBe(0);
    second();
    await waitFor(() => client.text().includes('id: 2'), 'the event after the quiet');
    expect(client.text()).toContain(': heartbeat\n\n');
    expect(await parsedEvents(client.text())).toEqual([
      { id: '1', event: undefined, data: message(1) },
      { id: '2', event: undefined, data: message(2) },
    ]);
    // The count is the metric's.
    const metrics = await fetch(`http://127.0.0.1:${r.gateway.detector!.metricsPort}/metrics`).then((m) => m.text());
    expect(metrics).toMatch(new RegExp(`^${METRIC_GATEWAY_SSE_HEARTBEATS_TOTAL}(\\{[^}]*\\})? [1-9]`, 'm'));
    client.stop();
  });
});

describe('never inside an event', () => {
  for (const [name, first, rest] of [
    ['LF', `event: message\nid: 2\n`, `data: ${message(2)}\n\n`],
    // The first chunk ends in a CR whose LF comes later: the line is not known to be over.
    ['CRLF split between CR and LF', `id: 2\r\ndata: ${message(2)}\r`, `\n\r\n`],
    // A complete field line, and the blank line that ends the event still to come.
    ['a field line awaiting its blank line', `id: 2\r\ndata: ${message(2)}\r\n`, `\r\n`],
  ] as const)
    it(`an event written in two chunks far apart reaches the client whole (${name})`, async () => {
      let res: ServerResponse | undefined;
      const r = await rig(
        (_req, response) => {
          res = response;
          response.writeHead(200, SSE_HEADERS);
          response.write(`id: 1\ndata: ${message(1)}\n\n`);
        },
        { sseHeartbeatMs: HEARTBEAT_MS },
      );
      const client = listen(r.endpoint);
      await waitFor(() => r.gateway.counts().heartbeats >= 2, 'heartbeats between events');
      res!.write(first);
      await waitFor(() => client.text().endsWith(first), 'the first half');
      const before = r.gateway.counts().heartbeats;
      // Several intervals with the upstream mid-event: no comment may go out.
      await sleep(5 * HEARTBEAT_MS);
      expect(r.gateway.counts().heartbeats).toBe(before);
      res!.write(rest);
      // The next comment comes right after the event's end, never between its lines.
      await waitFor(
        () => client.text().includes(first + rest + ': heartbeat\n\n'),
        'a heartbeat once the event is whole',
      );
      expect(r.gateway.counts().heartbeats).toBeGreaterThan(before);
      const text = client.text();
      const events = await parsedEvents(text);
      expect(events.map((e) => [e.id, e.data])).toEqual([
        ['1', message(1)],
        ['2', message(2)],
      ]);
      client.stop();
    });

  it('writes nothing while the upstream leaves a line unfinished, however long it is quiet', async () => {
    const r = await rig(
      (_req, response) => {
        response.writeHead(200, SSE_HEADERS);
        response.write('data: {"jsonrpc":"2.0","method":"notifications/mess');
      },
      { sseHeartbeatMs: HEARTBEAT_MS },
    );
    const client = listen(r.endpoint);
    await waitFor(() => client.text().includes('notifications/mess'), 'the line in progress');
    const before = r.gateway.counts().heartbeats;
    await sleep(4 * HEARTBEAT_MS);
    expect(r.gateway.counts().heartbeats).toBe(before);
    expect(client.text()).toMatch(/notifications\/mess$/);
    client.stop();
  });
});

describe('third-party SSE parsers read the same events with the heartbeat on', () => {
  /** An upstream stream of three events with quiet gaps between them (and one inside the second). */
  const script = (_req: IncomingMessage, res: ServerResponse): void => {
    res.writeHead(200, SSE_HEADERS);
    res.write(`retry: 5000\nid: 1\ndata: ${message(1)}\n\n`);
    void (async () => {
      await sleep(3 * HEARTBEAT_MS);
      res.write(`event: message\nid: 2\ndata: ${message(2)}\n`);
      await sleep(3 * HEARTBEAT_MS);
      res.write(`data: second line\n\n: the server's own comment\n`);
      await sleep(3 * HEARTBEAT_MS);
      res.end(`id: 3\ndata: ${message(3)}\n\n`);
    })();
  };

  async function run(options: { sseHeartbeatMs?: number }) {
    const r = await rig(script, options);
    // eventsource-parser, on the raw bytes.
    const client = listen(r.endpoint);
    await waitFor(() => client.complete(), 'the stream to end');
    const parsed = await parsedEvents(client.text());
    // The EventSource client (the `eventsource` package), over its own HTTP connection.
    const received: { data: string; lastEventId: string; type: string }[] = [];
    const es = new EventSource(r.endpoint);
    es.onmessage = (e) => void received.push({ data: e.data, lastEventId: e.lastEventId, type: e.type });
    cleanups.push(() => es.close());
    await waitFor(() => received.length >= 3, 'EventSource to read three events');
    es.close();
    return { parsed, received, heartbeats: r.gateway.counts().heartbeats, text: client.text() };
  }

  it('eventsource-parser and EventSource: identical events, heartbeats or not', async () => {
    const off = await run({});
    const on = await run({ sseHeartbeatMs: HEARTBEAT_MS });
    expect(off.heartbeats).toBe(0);
    expect(on.heartbeats).toBeGreaterThanOrEqual(2);
    expect(on.text).toContain(': heartbeat\n\n');
    expect(on.text).not.toBe(off.text);
    expect(on.parsed).toEqual(off.parsed);
    expect(on.parsed.map((e) => e.id)).toEqual(['1', '2', '3']);
    expect(on.parsed[1]!.data).toBe(`${message(2)}\nsecond line`);
    expect(on.received.slice(0, 3)).toEqual(off.received.slice(0, 3));
  });
});

describe('the SDK clients read the same messages with the heartbeat on', () => {
  const lab: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const l of lab.splice(0)) await l.close();
  });

  async function session(kind: SdkClientKind, sseHeartbeatMs: number | undefined) {
    const server = await startLabServer();
    lab.push(server);
    const gateway: RunningGateway = await startTestGateway(server.url, sseHeartbeatMs ? { sseHeartbeatMs } : {});
    lab.push(gateway);
    const client = await connectSdkSession(kind, gatewayMcpUrl(gateway, server.url), fetch, `heartbeat-${kind}`);
    const progress: number[] = [];
    // A call quiet for several heartbeats inside its SSE response, after its progress event.
    const result = await client.callTool(
      'quiet_progress',
      { quietMs: 8 * HEARTBEAT_MS, text: 'done' },
      { onprogress: (p) => void progress.push(p.progress) },
    );
    const listening = await client.callTool('notify_listening', {});
    const heartbeats = gateway.counts().heartbeats;
    await client.close();
    return {
      result,
      listening,
      progress,
      errors: [...client.errors],
      requests: client.log.map((r) => [r.method, r.rpc]),
      heartbeats,
    };
  }

  for (const kind of ['sdk', 'sdk-v2'] as const)
    it(`${kind}: same result, same progress, no error`, async () => {
      const off = await session(kind, undefined);
      const on = await session(kind, HEARTBEAT_MS);
      expect(off.heartbeats).toBe(0);
      expect(on.heartbeats).toBeGreaterThanOrEqual(3);
      expect(on.result.content).toEqual([{ type: 'text', text: 'done' }]);
      expect(on.result).toEqual(off.result);
      expect(on.listening).toEqual(off.listening);
      expect(on.progress).toEqual(off.progress);
      expect(on.errors).toEqual([]);
      expect(off.errors).toEqual([]);
      expect(on.requests).toEqual(off.requests);
    });
});
