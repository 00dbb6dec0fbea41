// The client's response ends before the gateway observes the body's end. Most servers send a JSON answer
// chunked (`writeHead` then `end(body)`), so the client has the whole answer only with its last chunk;
// the body's parse, its spans and the detector's work must not come before that chunk is written.
//
// (An SSE event's bytes are written by Node on the next tick, after its scan, whatever the order of the
// two within the tick: Node corks a chunked response's socket for the rest of the tick to write a chunk's
// pieces at once.)
//
// Proved by order, not by time: the client runs in a worker thread (an event loop of its own) and raises
// a shared flag once it has read the response's last chunk. A span processor blocks the gateway's thread
// in `onEnd` until that flag is up (bounded at 5 s). Had the gateway observed the end first, its last
// chunk would still be unwritten while it blocks, and the wait would run out.
import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { SPAN_REQUEST_TERMINAL } from '@resumewatch/semconv';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../src/index.js';
import { startScriptedUpstream } from './helpers/scripted-upstream.js';

const WAIT_MS = 5_000;

/** Sends one request over a raw socket and raises flag[0] once what it has read ends with `until`. */
const CLIENT = `
const { connect } = require('node:net');
const { workerData } = require('node:worker_threads');
const flag = new Int32Array(workerData.flag);
const socket = connect(workerData.port, '127.0.0.1', () => socket.write(workerData.request));
let seen = '';
socket.on('data', (chunk) => {
  seen += chunk.toString('latin1');
  if (seen.includes(workerData.until)) {
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
    socket.end();
  }
});
`;

let gateway: RunningGateway;
let upstream: Awaited<ReturnType<typeof startScriptedUpstream>>;
/** Per span ended after the client's flag was armed: its name, and whether the client had the last chunk by then. */
const waits: { name: string; kind: SpanKind; result: string }[] = [];
let flag = new Int32Array(new SharedArrayBuffer(4));
let armed = false;

const blocker: SpanProcessor = {
  onStart: () => undefined,
  onEnd(span: ReadableSpan) {
    if (!armed) return;
    // 'ok' or 'not-equal': the client had read the last chunk; 'timed-out': it had not.
    waits.push({ name: span.name, kind: span.kind, result: Atomics.wait(flag, 0, 0, WAIT_MS) });
  },
  forceFlush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
};

beforeAll(async () => {
  upstream = await startScriptedUpstream();
  gateway = await startGateway({
    upstream: upstream.url,
    port: 0,
    spanProcessors: [blocker],
    detector: { config: { metricsPort: 0 }, output: null },
  });
});

afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

async function exchange(id: number, until: string): Promise<void> {
  flag = new Int32Array(new SharedArrayBuffer(4));
  waits.length = 0;
  armed = true;
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: {} } });
  const path = new URL(upstream.url).pathname;
  const request =
    `POST ${path} HTTP/1.1\r\nHost: ${gateway.host}:${gateway.port}\r\n` +
    'Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const worker = new Worker(CLIENT, {
    eval: true,
    workerData: { port: gateway.port, request, until, flag: flag.buffer },
  });
  await new Promise<void>((resolve, reject) => {
    worker.once('exit', () => resolve());
    worker.once('error', reject);
  });
  await gateway.flush();
  armed = false;
}

describe('the client gets the last chunk before the body end is observed', () => {
  it('JSON answered chunked: the terminal and request spans end after the last chunk is written', async () => {
    upstream.script = (_req, res, seen) => {
      const { id } = JSON.parse(seen.body.toString()) as { id: number };
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'ok' }] } }));
    };
    // The last chunk of a chunked body.
    await exchange(1, '\r\n0\r\n\r\n');
    expect(waits.map((w) => w.name)).toContain(SPAN_REQUEST_TERMINAL);
    expect(waits.some((w) => w.kind === SpanKind.CLIENT)).toBe(true);
    for (const wait of waits) expect(wait, wait.name).toMatchObject({ result: expect.not.stringMatching('timed-out') });
  });
});
