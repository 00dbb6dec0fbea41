import { connect as h2connect, constants as h2, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { setTimeout as pause } from 'node:timers/promises';
import { deflateSync, gzipSync } from 'node:zlib';
import { Client, Metadata, credentials, status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startServer, type RunningServer } from '../src/index.js';
import { encodeRequest } from '../../detector/test/helpers/protobuf-encode.js';
import { seedScenario } from '../../detector/test/helpers/spans.js';

/*
 * serve's own OTLP/gRPC door (node:http2, no grpc-js) under what a gRPC client may send: the framing,
 * compression, resets and silences, and the connection's life. Proved by statuses, bytes in the budget
 * and the streams' state, never by how long something took.
 */
const EXPORT = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';
const KIB = 1024;

/** A length-prefixed gRPC message. */
function framed(message: Buffer, flag = 0, length = message.length): Buffer {
  const prefix = Buffer.alloc(5);
  prefix[0] = flag;
  prefix.writeUInt32BE(length, 1);
  return Buffer.concat([prefix, message]);
}

/** The seed spans of `session` as an ExportTraceServiceRequest. */
const request = (session: string): Buffer => Buffer.from(encodeRequest(seedScenario({ session, request: 1 }, 3)));

interface Answer {
  /** Response headers and trailers together (Trailers-Only puts the status in the headers). */
  h: Record<string, unknown>;
  /** The response's DATA. */
  body: Buffer;
  /** The stream's RST_STREAM code once closed (0: none, or NO_ERROR). */
  rstCode: number;
  /** The stream's HTTP/2 state when its response came (nghttp2's, as the client sees it). */
  stateAtResponse: number | undefined;
}

/** Opens an Export call on `session`; `answer` resolves once the stream is closed. */
function open(session: ClientHttp2Session, headers: Record<string, string> = {}, endStream = false) {
  const stream = session.request(
    {
      [h2.HTTP2_HEADER_METHOD]: 'POST',
      [h2.HTTP2_HEADER_PATH]: EXPORT,
      [h2.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
      te: 'trailers',
      ...headers,
    },
    { endStream },
  );
  stream.on('error', () => undefined);
  const answer = new Promise<Answer>((resolve) => {
    let h: Record<string, unknown> = {};
    const body: Buffer[] = [];
    let stateAtResponse: number | undefined;
    stream.on('response', (r) => {
      h = { ...h, ...r };
      stateAtResponse = stream.state.state;
    });
    stream.on('trailers', (t) => (h = { ...h, ...t }));
    stream.on('data', (d: Buffer) => body.push(d));
    stream.on('close', () => resolve({ h, body: Buffer.concat(body), rstCode: stream.rstCode ?? 0, stateAtResponse }));
  });
  return { stream, answer };
}

/** One call that sends `chunks` (each its own write) and ends. */
async function call(session: ClientHttp2Session, chunks: Buffer[], headers: Record<string, string> = {}) {
  const { stream, answer } = open(session, headers);
  for (const c of chunks) stream.write(c);
  stream.end();
  return answer;
}

const statusOf = (a: Answer): number => Number(a.h['grpc-status']);

/** The stream was open when the answer came, the client never ended its side, and the server's RST_STREAM(NO_ERROR) closed it. */
function expectCancelledAfterAnswer(a: Answer, stream: ClientHttp2Stream): void {
  expect(a.stateAtResponse).toBe(h2.NGHTTP2_STREAM_STATE_OPEN);
  expect(stream.closed).toBe(true);
  expect(a.rstCode).toBe(h2.NGHTTP2_NO_ERROR);
}

describe('serve’s OTLP/gRPC door', () => {
  let server: RunningServer | undefined;
  const sessions: ClientHttp2Session[] = [];
  const start = async (options: Parameters<typeof startServer>[0] = {}) => {
    server = await startServer({
      port: 0,
      grpcPort: 0,
      metricsPort: 0,
      output: null,
      log: () => undefined,
      ...options,
    });
    return server;
  };
  const connect = (s: RunningServer): ClientHttp2Session => {
    const session = h2connect(`http://127.0.0.1:${s.grpcPort}`);
    session.on('error', () => undefined);
    sessions.push(session);
    return session;
  };
  afterEach(async () => {
    for (const s of sessions.splice(0)) s.destroy();
    await server?.close();
    server = undefined;
  });

  it('answers a message split over many DATA frames, and the response is one message then OK in trailers', async () => {
    const s = await start();
    const session = connect(s);
    const whole = framed(request('split'));
    const { stream, answer } = open(session);
    // The prefix itself split, then the message in small pieces, each flushed before the next.
    for (const at of [0, 2, 5, 40, 41, 200]) {
      stream.write(whole.subarray(at, [2, 5, 40, 41, 200, whole.length][[0, 2, 5, 40, 41, 200].indexOf(at)]));
      await pause(5);
    }
    stream.end();
    const a = await answer;
    expect(a.h[':status']).toBe(200);
    expect(a.h['content-type']).toBe('application/grpc+proto');
    expect(statusOf(a)).toBe(status.OK);
    // An empty ExportTraceServiceResponse, length-prefixed.
    expect([...a.body]).toEqual([0, 0, 0, 0, 0]);
    await vi.waitFor(() => expect(s.findings().some((f) => f.session_id === 'split')).toBe(true));
    expect(s.inflight.used).toBe(0);
  });

  it('reads gzip and deflate (grpc-encoding), and refuses a compressed flag without an encoding (INTERNAL) or with one it does not read (UNIMPLEMENTED)', async () => {
    const s = await start();
    const session = connect(s);
    const gz = await call(session, [framed(gzipSync(request('gz')), 1)], { 'grpc-encoding': 'gzip' });
    expect(statusOf(gz)).toBe(status.OK);
    const df = await call(session, [framed(deflateSync(request('df')), 1)], { 'grpc-encoding': 'deflate' });
    expect(statusOf(df)).toBe(status.OK);
    // An encoding declared, and the message sent uncompressed (flag 0): read as it is.
    const plain = await call(session, [framed(request('plain'))], { 'grpc-encoding': 'gzip' });
    expect(statusOf(plain)).toBe(status.OK);
    await vi.waitFor(() =>
      expect(['gz', 'df', 'plain'].every((id) => s.findings().some((f) => f.session_id === id))).toBe(true),
    );
    for (const headers of [{}, { 'grpc-encoding': 'identity' }] as Record<string, string>[]) {
      const flagged = await call(session, [framed(request('x'), 1)], headers);
      expect(statusOf(flagged)).toBe(status.INTERNAL);
      expect(flagged.h['grpc-message']).toBe('compressed flag set on a message without grpc-encoding');
    }
    const br = await call(session, [framed(request('x'), 1)], { 'grpc-encoding': 'br' });
    expect(statusOf(br)).toBe(status.UNIMPLEMENTED);
    expect(br.h['grpc-accept-encoding']).toBe('identity,deflate,gzip');
    const garbage = await call(session, [framed(Buffer.from('not gzip'), 1)], { 'grpc-encoding': 'gzip' });
    expect(statusOf(garbage)).toBe(status.INTERNAL);
    expect(s.inflight.used).toBe(0);
  });

  it('a gzip bomb stops at --max-decompressed: RESOURCE_EXHAUSTED, its bytes released, the door still serving', async () => {
    const s = await start({ maxDecompressedBytes: 64 * KIB });
    const session = connect(s);
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * KIB));
    expect(bomb.length).toBeLessThan(64 * KIB);
    const a = await call(session, [framed(bomb, 1)], { 'grpc-encoding': 'gzip' });
    expect(statusOf(a)).toBe(status.RESOURCE_EXHAUSTED);
    expect(a.h['grpc-message']).toBe(`Received message that decompresses to a size larger than ${64 * KIB}`);
    expect(s.inflight.used).toBe(0);
    // The bound, and the compressed message itself, held beside gunzip's output while it ran.
    expect(s.inflight.peak).toBe(64 * KIB + bomb.length);
    expect(statusOf(await call(session, [framed(request('after-bomb'))]))).toBe(status.OK);
  });

  it('a compressed message whose own bytes do not fit beside the bound in the budget is shed (RESOURCE_EXHAUSTED with RetryInfo), not decompressed', async () => {
    const s = await start({ maxDecompressedBytes: 64 * KIB, maxInflightBytes: 64 * KIB + 16 });
    const session = connect(s);
    const gz = gzipSync(request('too-big-to-hold-twice'));
    expect(gz.length).toBeGreaterThan(16);
    const a = await call(session, [framed(gz, 1)], { 'grpc-encoding': 'gzip' });
    expect(statusOf(a)).toBe(status.RESOURCE_EXHAUSTED);
    expect(a.h['grpc-message']).toMatch(/^server busy: request bodies in flight reach/);
    expect(a.h['grpc-status-details-bin']).toBeDefined();
    expect(s.inflight.used).toBe(0);
    expect(s.inflight.peak).toBe(64 * KIB);
    expect(s.findings().some((f) => f.session_id === 'too-big-to-hold-twice')).toBe(false);
    // The same spans uncompressed fit, and are read.
    expect(statusOf(await call(session, [framed(request('plain-fits'))]))).toBe(status.OK);
  });

  it('refuses a length prefix above --max-decompressed from the prefix, before the message is sent', async () => {
    const s = await start({ maxDecompressedBytes: 64 * KIB, idleTimeoutMs: 300 });
    const session = connect(s);
    const { stream, answer } = open(session);
    // Only the prefix, declaring 4 GiB - 1: the refusal cannot have waited for the message.
    stream.write(framed(Buffer.alloc(0), 0, 0xffff_ffff));
    const a = await answer;
    expect(statusOf(a)).toBe(status.RESOURCE_EXHAUSTED);
    expect(a.h['grpc-message']).toBe(`Received message larger than max (${0xffff_ffff} vs ${64 * KIB})`);
    // The stream was open when the answer came and the client never ended its side: the server reset it
    // once --idle-timeout passed (not with the answer: a reset while the client still sends loses the
    // answer on Node 22's client).
    expectCancelledAfterAnswer(a, stream);
    expect(s.inflight.used).toBe(0);
  });

  it('refuses a truncated prefix, a truncated message, a missing message and a second message', async () => {
    const s = await start();
    const session = connect(s);
    const whole = framed(request('t'));
    expect(statusOf(await call(session, [whole.subarray(0, 3)]))).toBe(status.INTERNAL);
    expect(statusOf(await call(session, [whole.subarray(0, whole.length - 1)]))).toBe(status.INTERNAL);
    const missing = await open(session, {}, true).answer;
    expect(statusOf(missing)).toBe(status.UNIMPLEMENTED);
    const two = await call(session, [whole, whole]);
    expect(statusOf(two)).toBe(status.UNIMPLEMENTED);
    expect(two.h['grpc-message']).toBe('Received a second request message for unary method Export');
    expect(s.findings().some((f) => f.session_id === 't')).toBe(false);
    expect(s.inflight.used).toBe(0);
  });

  it('a stream reset mid-message releases its bytes; the connection goes on serving', async () => {
    const s = await start({ maxDecompressedBytes: 256 * KIB });
    const session = connect(s);
    const { stream, answer } = open(session);
    stream.write(Buffer.concat([framed(Buffer.alloc(0), 0, 200 * KIB), Buffer.alloc(64 * KIB)]));
    await vi.waitFor(() => expect(s.inflight.used).toBe(256 * KIB));
    stream.close(h2.NGHTTP2_CANCEL);
    expect((await answer).rstCode).toBe(h2.NGHTTP2_CANCEL);
    await vi.waitFor(() => expect(s.inflight.used).toBe(0));
    expect(statusOf(await call(session, [framed(request('after-reset'))]))).toBe(status.OK);
  });

  it('HEADERS without END_STREAM and nothing else: cancelled at --idle-timeout (DEADLINE_EXCEEDED, then RST_STREAM NO_ERROR)', async () => {
    const s = await start({ idleTimeoutMs: 300 });
    const session = connect(s);
    const { stream, answer } = open(session);
    await vi.waitFor(() => expect(s.inflight.used).toBe(s.config.maxDecompressedBytes));
    const a = await answer;
    expect(statusOf(a)).toBe(status.DEADLINE_EXCEEDED);
    expect(a.h['grpc-message']).toBe('no complete message within 300 ms (--idle-timeout)');
    // The stream was open when the answer came, the client never ended its side, and it was closed by the
    // server's RST_STREAM(NO_ERROR): cancelled, not kept.
    expectCancelledAfterAnswer(a, stream);
    expect(s.inflight.used).toBe(0);
  });

  it('a grpc-timeout shorter than --idle-timeout bounds the call instead; one that does not parse is INTERNAL', async () => {
    const s = await start();
    const session = connect(s);
    const { answer } = open(session, { 'grpc-timeout': '200m' });
    const a = await answer;
    expect(statusOf(a)).toBe(status.DEADLINE_EXCEEDED);
    expect(a.h['grpc-message']).toBe('Deadline exceeded');
    const bad = await call(session, [framed(request('bad-timeout'))], { 'grpc-timeout': '5 seconds' });
    expect(statusOf(bad)).toBe(status.INTERNAL);
    expect(bad.h['grpc-message']).toBe('Invalid grpc-timeout value "5 seconds"');
    expect(s.inflight.used).toBe(0);
  });

  it('content type other than application/grpc is 415; another method is UNIMPLEMENTED; application/grpc+proto is read', async () => {
    const s = await start();
    const session = connect(s);
    const json = await call(session, [framed(request('j'))], { [h2.HTTP2_HEADER_CONTENT_TYPE]: 'application/json' });
    expect(json.h[':status']).toBe(415);
    const other = await call(session, [framed(request('o'))], { [h2.HTTP2_HEADER_PATH]: '/foo.Bar/Baz' });
    expect(statusOf(other)).toBe(status.UNIMPLEMENTED);
    expect(other.h['grpc-message']).toBe('The server does not implement the method /foo.Bar/Baz');
    const proto = await call(session, [framed(request('p'))], {
      [h2.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc+proto',
    });
    expect(statusOf(proto)).toBe(status.OK);
  });

  it('offers 16 concurrent streams a connection, closes one without calls after --idle-timeout, and caps connections (--max-connections)', async () => {
    const s = await start({ idleTimeoutMs: 300, maxConnections: 1 });
    const session = connect(s);
    expect(statusOf(await call(session, [framed(request('idle'))]))).toBe(status.OK);
    expect(session.remoteSettings.maxConcurrentStreams).toBe(16);
    const extra = netConnect(s.grpcPort!, '127.0.0.1');
    extra.on('error', () => undefined);
    await new Promise<void>((resolve) => extra.once('close', () => resolve()));
    expect(extra.bytesRead).toBe(0);
    const closed = new Promise<void>((resolve) => session.once('close', () => resolve()));
    await closed;
    expect(session.destroyed).toBe(true);
  });

  it('closes a connection --idle-timeout after its last call ended, not at the next whole interval', async () => {
    const s = await start({ idleTimeoutMs: 1000 });
    // The connection's idle clock is faked from its start; sockets and streams stay real.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const session = connect(s);
      let closed = false;
      const gone = new Promise<void>((resolve) => session.once('close', () => resolve(void (closed = true))));
      // The server's SETTINGS have come: its side of the connection, and its idle timer, exist.
      await new Promise((resolve) => session.once('remoteSettings', resolve));
      vi.advanceTimersByTime(500);
      expect(statusOf(await call(session, [framed(request('idle-late'))]))).toBe(status.OK);
      // The call ended 500 ms into the connection's life: idle from then on.
      vi.advanceTimersByTime(999);
      await pause(50);
      expect(closed).toBe(false);
      // At 1,501 ms the server closes it (GOAWAY). Not vi.waitFor: it would advance the fake clock, and
      // the old check, a whole interval later at 2,000 ms, would pass too; here it never comes.
      vi.advanceTimersByTime(2);
      await gone;
    } finally {
      vi.useRealTimers();
    }
  });

  it('on close: answers the call being received, refuses new connections, then resolves', async () => {
    const s = await start({ graceMs: 10_000 });
    const session = connect(s);
    const whole = framed(request('drain'));
    const { stream, answer } = open(session);
    stream.write(whole.subarray(0, 30));
    await vi.waitFor(() => expect(s.inflight.used).toBe(s.config.maxDecompressedBytes));
    const closing = s.close();
    await new Promise<void>((resolve) => session.once('goaway', () => resolve()));
    const refused = netConnect(s.grpcPort!, '127.0.0.1');
    await new Promise<void>((resolve) => refused.once('error', () => resolve()));
    stream.end(whole.subarray(30));
    expect(statusOf(await answer)).toBe(status.OK);
    await closing;
    expect(s.findings().some((f) => f.session_id === 'drain')).toBe(true);
  });

  it('on close: a call that never completes is cut off after --grace', async () => {
    const s = await start({ graceMs: 200 });
    const session = connect(s);
    const { stream, answer } = open(session);
    stream.write(framed(Buffer.alloc(0), 0, 1000));
    await vi.waitFor(() => expect(s.inflight.used).toBe(s.config.maxDecompressedBytes));
    await s.close();
    const a = await answer;
    expect(a.h['grpc-status']).toBeUndefined();
    expect(stream.closed).toBe(true);
    expect(s.inflight.used).toBe(0);
  });
});

describe('serve’s OTLP/gRPC door and a grpc-js client', () => {
  /** A grpc-js unary call; resolves with its status (`{}`: OK). */
  function grpcJs(port: number, body: Buffer, options: Record<string, unknown> = {}, path = EXPORT) {
    const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure(), options);
    return new Promise<{ code?: number; details?: string }>((resolve) =>
      client.makeUnaryRequest(
        path,
        (b: Buffer) => b,
        (b: Buffer) => b,
        body,
        new Metadata(),
        { deadline: Date.now() + 5000 },
        (err) => {
          client.close();
          resolve(err ?? {});
        },
      ),
    );
  }

  it('gets OK with gzip and deflate, RESOURCE_EXHAUSTED for a message over the bound, UNIMPLEMENTED for another method', async () => {
    const s = await startServer({
      port: 0,
      grpcPort: 0,
      metricsPort: 0,
      output: null,
      log: () => undefined,
      maxDecompressedBytes: 64 * KIB,
    });
    try {
      expect(await grpcJs(s.grpcPort!, request('js-gz'), { 'grpc.default_compression_algorithm': 2 })).toEqual({});
      expect(await grpcJs(s.grpcPort!, request('js-df'), { 'grpc.default_compression_algorithm': 1 })).toEqual({});
      expect(await grpcJs(s.grpcPort!, Buffer.alloc(100 * KIB, 1))).toMatchObject({
        code: status.RESOURCE_EXHAUSTED,
        details: `Received message larger than max (${100 * KIB} vs ${64 * KIB})`,
      });
      expect(await grpcJs(s.grpcPort!, request('x'), {}, '/foo.Bar/Baz')).toMatchObject({
        code: status.UNIMPLEMENTED,
      });
      await vi.waitFor(() =>
        expect(['js-gz', 'js-df'].every((id) => s.findings().some((f) => f.session_id === id))).toBe(true),
      );
      expect(s.inflight.used).toBe(0);
    } finally {
      await s.close();
    }
  });
});
