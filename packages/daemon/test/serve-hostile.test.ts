import { connect as h2connect, constants as h2 } from 'node:http2';
import { PassThrough } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { Client, Metadata, credentials, status } from '@grpc/grpc-js';
import { METRIC_FINDINGS_DROPPED_TOTAL, METRIC_REQUESTS_SHED_TOTAL, SpanReceivedResult } from '@resumewatch/semconv';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startServer, type RunningServer } from '../src/index.js';
import { type SpanRecord } from '@resumewatch/detector';
import { otlpJson } from '../../detector/test/helpers/otlp.js';
import { healthz, postHead, rawConnect } from './helpers/raw-client.js';
import { seedScenario, terminal } from '../../detector/test/helpers/spans.js';

/*
 * The numbered cases of "serve survives hostile and oversized telemetry": each one is sent to a real
 * `startServer` over loopback, and /healthz must keep answering around it. What is bounded is shown by
 * work (bytes, byte offsets, counts), never by how long it took.
 */
const TOKEN = 'hostile';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const EXPORT = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';
const MIB = 1024 * 1024;
/** The 11-byte body of case 1: field 2, wire type 2, a length that decodes as -11. */
const NEGATIVE_LENGTH = Buffer.from([0x12, 0xf5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);

function post(server: RunningServer, body: Buffer | string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`http://127.0.0.1:${server.httpPort}/v1/traces`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...AUTH, ...headers },
    body,
    signal: AbortSignal.timeout(5000),
  });
}

function grpcCall(
  port: number,
  body: Buffer,
  token = TOKEN,
): Promise<{ code?: number; details?: string; metadata?: Metadata }> {
  const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
  const md = new Metadata();
  md.set('authorization', `Bearer ${token}`);
  return new Promise((resolve) =>
    client.makeUnaryRequest(
      EXPORT,
      (b: Buffer) => b,
      (b: Buffer) => b,
      body,
      md,
      { deadline: Date.now() + 5000 },
      (err) => {
        client.close();
        resolve(err ?? {});
      },
    ),
  );
}

/** A terminal span whose session id is `bytes` long and unique. */
function longIdTerminal(i: number, bytes: number, service = 'svc'): SpanRecord {
  const s = terminal(
    { session: `${String(i).padStart(8, '0')}${'s'.repeat(bytes - 8)}`, request: i, service },
    Date.now(),
    `stream-${i}`,
  );
  return s;
}

async function metricValue(server: RunningServer, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`, { headers: AUTH })).text();
  const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

describe('serve under hostile input', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({
      port: 0,
      grpcPort: 0,
      metricsPort: 0,
      output: null,
      token: TOKEN,
      log: () => undefined,
    });
  });
  afterAll(() => server.close());
  afterEach(async () => {
    expect(await healthz(server.metricsPort)).toBe(200);
  });

  it('1. the 11-byte negative-length protobuf body is a 400 / INVALID_ARGUMENT naming the offset (HTTP and gRPC), and field 0 too', async () => {
    const res = await post(server, NEGATIVE_LENGTH, { 'content-type': 'application/x-protobuf' });
    expect(res.status).toBe(400);
    expect(Buffer.from(await res.arrayBuffer()).toString('latin1')).toContain(
      'malformed protobuf: negative length -11 at byte 1',
    );
    expect(await healthz(server.metricsPort)).toBe(200);
    expect(await grpcCall(server.grpcPort!, NEGATIVE_LENGTH)).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: 'malformed protobuf: negative length -11 at byte 1',
    });
    const field0 = await post(server, Buffer.from([0x02, 0x00]), { 'content-type': 'application/x-protobuf' });
    expect(field0.status).toBe(400);
    expect(Buffer.from(await field0.arrayBuffer()).toString('latin1')).toContain(
      'malformed protobuf: field number 0 at byte 0',
    );
  });

  it('2. megabyte session ids are kept bounded in bytes (cut and hashed), not whole', async () => {
    for (let r = 0; r < 3; r++) {
      const spans = Array.from({ length: 10 }, (_, i) => longIdTerminal(r * 100 + i, MIB));
      const res = await post(server, gzipSync(JSON.stringify(otlpJson(spans))), { 'content-encoding': 'gzip' });
      expect(res.status).toBe(200);
    }
    const sessions = server.detector
      .exportState()
      .requests.sessionIds.filter((s): s is string => s?.startsWith('00000') === true);
    expect(sessions).toHaveLength(30);
    for (const s of sessions) {
      expect(Buffer.byteLength(s)).toBe(256);
      expect(s).toMatch(/^\d{8}s+~[0-9a-f]{16}$/);
    }
    expect(new Set(sessions).size).toBe(30);
  });

  it('3. GET /findings stays an answer, bounded in bytes, after findings with 600 KiB ids', async () => {
    const spans = Array.from({ length: 12 }, (_, i) =>
      seedScenario({ session: `${i}`.padEnd(600 * 1024, 'f'), request: i, service: 'svc-3' }, 3),
    ).flat();
    const perScenario = spans.length / 12;
    for (let i = 0; i < spans.length; i += perScenario) {
      const res = await post(server, gzipSync(JSON.stringify(otlpJson(spans.slice(i, i + perScenario), 'svc-3'))), {
        'content-encoding': 'gzip',
      });
      expect(res.status).toBe(200);
    }
    const res = await fetch(`http://127.0.0.1:${server.metricsPort}/findings`, { headers: AUTH });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(server.config.findingsMaxBytes);
    const findings = JSON.parse(text) as { session_id: string; service: string; record?: string }[];
    // Four findings and one storm_ended record per scenario.
    expect(findings.filter((f) => f.service === 'svc-3' && f.record === undefined)).toHaveLength(48);
    expect(findings.filter((f) => f.service === 'svc-3')).toHaveLength(60);
    for (const f of findings) expect(Buffer.byteLength(f.session_id)).toBeLessThanOrEqual(256);
  });

  it('4. /metrics keeps answering with services named by megabytes: label values are bounded', async () => {
    for (let i = 0; i < 20; i++) {
      const service = `${i}-`.padEnd(MIB, 'n');
      const res = await post(
        server,
        gzipSync(
          JSON.stringify(otlpJson([terminal({ session: `m-${i}`, request: 1, service }, Date.now(), 'A')], service)),
        ),
        {
          'content-encoding': 'gzip',
        },
      );
      expect(res.status).toBe(200);
    }
    const res = await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`, { headers: AUTH });
    expect(res.status).toBe(200);
    const text = await res.text();
    // 20 MiB of names went in; the whole exposition is smaller than one of them.
    expect(Buffer.byteLength(text)).toBeLessThan(MIB);
    const labels = [...text.matchAll(/service="([^"]*)"/g)].map((m) => m[1]!);
    expect(labels.some((l) => l.startsWith('0-nnn'))).toBe(true);
    for (const l of labels) expect(Buffer.byteLength(l)).toBeLessThanOrEqual(256);
  });

  it('5. a JSON body of 16 M levels of "[" (16 KB of gzip) is refused at its 65th byte', async () => {
    const body = gzipSync(Buffer.alloc(16 * MIB, '['));
    expect(body.length).toBeLessThan(32 * 1024);
    const res = await post(server, body, { 'content-encoding': 'gzip' });
    expect(res.status).toBe(400);
    // The scan stops at the first bracket too deep (serve-bounds.test.ts counts the bytes it reads).
    expect(((await res.json()) as { message: string }).message).toBe(
      'malformed OTLP/JSON: nesting deeper than 64 levels at byte 64',
    );
    expect(server.inflight.used).toBe(0);
  });

  it('5. a declared Content-Length over the limit gets its 413, and a request without the token its 401, before the body is sent', async () => {
    const big = await rawConnect(server.httpPort);
    big.socket.write(postHead({ ...AUTH, 'content-type': 'application/json', 'content-length': 100 * MIB }));
    expect(await big.until(/^HTTP\/1\.1 413 /)).toMatch(/connection: close/i);
    await big.closed;
    const anon = await rawConnect(server.httpPort);
    anon.socket.write(postHead({ 'content-type': 'application/json', 'content-length': 4 * MIB }));
    expect(await anon.until(/^HTTP\/1\.1 401 /)).toMatch(/www-authenticate: Bearer/i);
    // A body within twice --max-body is read and thrown away after the answer: the connection closes once it is in.
    anon.socket.write(Buffer.alloc(4 * MIB, ' '));
    await anon.closed;
  });
});

describe('serve: total memory bounded in bytes', () => {
  let server: RunningServer;
  afterEach(async () => {
    expect(await healthz(server.metricsPort)).toBe(200);
    await server.close();
  });

  it('5. bodies held open are capped by --max-inflight across connections: the next one gets 429 with Retry-After at once', async () => {
    server = await startServer({
      port: 0,
      grpcPort: false,
      metricsPort: 0,
      output: null,
      token: TOKEN,
      maxBodyBytes: 256 * 1024,
      maxInflightBytes: MIB,
      retryAfterMs: 2000,
      log: () => undefined,
    });
    const held = [];
    // Four bodies of 256 KiB minus their last byte fill the 1 MiB budget.
    for (let i = 0; i < 4; i++) {
      const c = await rawConnect(server.httpPort);
      c.socket.write(postHead({ ...AUTH, 'content-type': 'application/json', 'content-length': 256 * 1024 }));
      c.socket.write(Buffer.alloc(256 * 1024 - 1, ' '));
      held.push(c);
    }
    await vi.waitFor(() => expect(server.inflight.used).toBe(MIB), { timeout: 5000 });
    const fifth = await rawConnect(server.httpPort);
    fifth.socket.write(postHead({ ...AUTH, 'content-type': 'application/json', 'content-length': 1000 }));
    const answer = await fifth.until(/\r\n\r\n\{.*\}$/s);
    expect(answer).toMatch(/^HTTP\/1\.1 429 /);
    expect(answer).toMatch(/retry-after: 2\r\n/i);
    expect(answer).toContain('"retryDelay":"2.000s"');
    // A chunked body (no declared length) is counted chunk by chunk.
    const chunked = await rawConnect(server.httpPort);
    chunked.socket.write(
      postHead({ ...AUTH, 'content-type': 'application/json', 'transfer-encoding': 'chunked' }) + '4\r\n{  }\r\n',
    );
    expect(await chunked.until(/^HTTP\/1\.1 429 /)).toBeTruthy();
    expect(await metricValue(server, METRIC_REQUESTS_SHED_TOTAL)).toBe(2);
    // The held bodies finish: they are answered and their bytes released.
    for (const c of held) c.socket.write(' ');
    for (const c of held) expect(await c.until(/^HTTP\/1\.1 400 /)).toBeTruthy();
    await vi.waitFor(() => expect(server.inflight.used).toBe(0), { timeout: 5000 });
    expect(server.inflight.peak).toBe(MIB);
  });

  it('5. slow headers, silent bodies and a gRPC connection that never starts HTTP/2 are cut off by --header-timeout and --idle-timeout', async () => {
    server = await startServer({
      port: 0,
      grpcPort: 0,
      metricsPort: 0,
      output: null,
      headerTimeoutMs: 300,
      idleTimeoutMs: 400,
      log: () => undefined,
    });
    const silentGrpc = await rawConnect(server.grpcPort!);
    const slowHeaders = await rawConnect(server.httpPort);
    slowHeaders.socket.write('POST /v1/traces HTTP/1.1\r\nhost: x\r\n');
    const silentBody = await rawConnect(server.httpPort);
    silentBody.socket.write(
      postHead({ 'content-type': 'application/json', 'content-length': 1000 }) + '{"resourceSpans":',
    );
    // Closed by the server (the test's own timeout is the only clock here).
    await Promise.all([slowHeaders.closed, silentBody.closed, silentGrpc.closed]);
    expect(slowHeaders.received()).toMatch(/^(HTTP\/1\.1 408 |)/);
    await vi.waitFor(() => expect(server.inflight.used).toBe(0), { timeout: 5000 });
  });

  it('5. gRPC: unfinished streams hold --max-decompressed each against the budget, the next is RESOURCE_EXHAUSTED with RetryInfo, and silent ones are cancelled', async () => {
    server = await startServer({
      port: 0,
      grpcPort: 0,
      metricsPort: 0,
      output: null,
      token: TOKEN,
      log: () => undefined,
      maxDecompressedBytes: 256 * 1024,
      maxInflightBytes: MIB,
      idleTimeoutMs: 3000,
      retryAfterMs: 1500,
    });
    const session = h2connect(`http://127.0.0.1:${server.grpcPort}`);
    const open = (token: string | undefined) =>
      session.request({
        [h2.HTTP2_HEADER_METHOD]: 'POST',
        [h2.HTTP2_HEADER_PATH]: EXPORT,
        [h2.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
        te: 'trailers',
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      });
    const trailersOf = (stream: ReturnType<typeof open>) =>
      new Promise<Record<string, unknown>>((resolve) => {
        let headers: Record<string, unknown> = {};
        // A status without a message comes trailers-only: in the response headers.
        stream.on('response', (h) => {
          headers = h;
          if (h['grpc-status'] !== undefined) resolve(h);
        });
        stream.on('trailers', (t) => resolve({ ...headers, ...t }));
        stream.on('close', () => resolve(headers));
        stream.resume();
      });
    // Unauthenticated: refused from its metadata, before any message byte is sent.
    const anon = trailersOf(open(undefined));
    expect((await anon)['grpc-status']).toBe(String(status.UNAUTHENTICATED));
    // Four unfinished messages (a 5-byte prefix declaring 200 KiB, then 64 KiB of it) fill the 1 MiB budget.
    const prefix = Buffer.from([0, 0, 0x03, 0x20, 0x00]);
    const stalled = [];
    for (let i = 0; i < 4; i++) {
      const s = open(TOKEN);
      s.write(Buffer.concat([prefix, Buffer.alloc(64 * 1024)]));
      stalled.push(trailersOf(s));
    }
    await vi.waitFor(() => expect(server.inflight.used).toBe(MIB), { timeout: 5000 });
    const refused = await trailersOf(open(TOKEN));
    expect(refused['grpc-status']).toBe(String(status.RESOURCE_EXHAUSTED));
    const details = Buffer.from(String(refused['grpc-status-details-bin']), 'base64').toString('latin1');
    expect(details).toContain('type.googleapis.com/google.rpc.RetryInfo');
    // RetryInfo { retry_delay { seconds: 1, nanos: 500000000 } }
    expect(
      Buffer.from(details, 'latin1').includes(
        Buffer.from([0x0a, 0x08, 0x08, 0x01, 0x10, 0x80, 0xca, 0xb5, 0xee, 0x01]),
      ),
    ).toBe(true);
    // The stalled ones are cancelled after --idle-timeout, and their bytes released.
    for (const t of await Promise.all(stalled)) expect(t['grpc-status']).toBe(String(status.DEADLINE_EXCEEDED));
    expect(server.inflight.used).toBe(0);
    session.close();
  });

  it('5. a gzip body whose client leaves while it is gunzipped: its spans are read, and every byte it reserved is released', async () => {
    server = await startServer({
      port: 0,
      grpcPort: false,
      metricsPort: 0,
      output: null,
      token: TOKEN,
      log: () => undefined,
    });
    // One terminal span, then 30 MiB of blanks (valid JSON, 30 KiB of gzip): gunzip takes about two thousand
    // chunks, each reserved as it comes, and is still at work when the connection's close is read.
    const json = JSON.stringify(
      otlpJson([terminal({ session: 'gz-gone', request: 1, service: 'svc-gz' }, Date.now(), 'A')], 'svc-gz'),
    );
    const body = gzipSync(Buffer.concat([Buffer.from(json), Buffer.alloc(30 * MIB, ' ')]));
    const c = await rawConnect(server.httpPort);
    c.socket.write(
      postHead({
        ...AUTH,
        'content-type': 'application/json',
        'content-encoding': 'gzip',
        'content-length': body.length,
      }),
    );
    c.socket.end(body);
    c.socket.destroy();
    await vi.waitFor(() => expect(server.detector.stats().spans[SpanReceivedResult.ACCEPTED]).toBe(1), {
      timeout: 10_000,
    });
    expect(server.inflight.peak).toBeGreaterThan(MIB);
    await vi.waitFor(() => expect(server.inflight.used).toBe(0), { timeout: 5000 });
  });

  it('6. findings for a stdout nobody reads are dropped and counted past --stdout-buffer, not buffered', async () => {
    const stuck = new PassThrough({ highWaterMark: 1024 });
    server = await startServer({
      port: 0,
      grpcPort: false,
      metricsPort: 0,
      output: stuck,
      stdoutBufferBytes: 16 * 1024,
      log: () => undefined,
    });
    const spans = Array.from({ length: 100 }, (_, i) => seedScenario({ session: `out-${i}`, request: i }, 3)).flat();
    const res = await post(server, JSON.stringify(otlpJson(spans)));
    expect(res.status).toBe(200);
    // Four findings and one storm_ended record per scenario.
    await vi.waitFor(() => expect(server.findings()).toHaveLength(500), { timeout: 5000 });
    expect(stuck.writableLength).toBeLessThanOrEqual(16 * 1024);
    const written = stuck.writableLength;
    const dropped = await metricValue(server, METRIC_FINDINGS_DROPPED_TOTAL);
    expect(dropped).toBeGreaterThan(300);
    // What was written is whole lines; what was not is exactly what was counted.
    const text = stuck.read(written)?.toString() ?? '';
    expect(text.endsWith('\n')).toBe(true);
    expect(text.trim().split('\n')).toHaveLength(500 - dropped);
  });
});
