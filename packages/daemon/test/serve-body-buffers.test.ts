import { request } from 'node:http';
import { gzipSync } from 'node:zlib';
import { SpanReceivedResult } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BodyBuffers } from '../src/doors/body-buffers.js';
import { startServer, type RunningServer } from '../src/index.js';
import { otlpJson } from '../../detector/test/helpers/otlp.js';
import { encodeRequest } from '../../detector/test/helpers/protobuf-encode.js';
import { T0, terminal } from '../../detector/test/helpers/spans.js';

describe('BodyBuffers', () => {
  it('gives back a buffer at least as long as asked, reusing one given back', () => {
    const pool = new BodyBuffers(2, 1 << 20);
    const a = pool.take(100_000);
    expect(a.length).toBe(100_000);
    pool.give(a);
    expect(pool.take(5)).toBe(a);
    // A kept buffer too small for the body is replaced.
    pool.give(a);
    const b = pool.take(200_000);
    expect(b).not.toBe(a);
    expect(b.length).toBe(200_000);
  });

  it('keeps at most maxBuffers, each of at most maxBytes', () => {
    const pool = new BodyBuffers(2, 1 << 20);
    const big = pool.take((1 << 20) + 1);
    expect(big.length).toBe((1 << 20) + 1);
    pool.give(big);
    expect(pool.kept).toBe(0);
    for (const b of [pool.take(10), pool.take(10), pool.take(10)]) pool.give(b);
    expect(pool.kept).toBe(2);
  });
});

/**
 * The receiver copies a declared body into a reused buffer: a short body after a long one must be
 * decoded alone, not with the rest of the long one's bytes behind it.
 */
describe('serve: bodies read into reused buffers', () => {
  let server: RunningServer;
  let url: string;
  beforeAll(async () => {
    server = await startServer({ port: 0, grpcPort: false, metricsPort: 0, output: null });
    url = `http://127.0.0.1:${server.httpPort}/v1/traces`;
  });
  afterAll(() => server.close());

  const terminals = (tag: string, n: number) =>
    Array.from({ length: n }, (_, i) =>
      terminal({ session: `${tag}-${i}`, request: i, service: 'svc-pool' }, T0 + i, `${tag}-stream-${i}`),
    );
  const accepted = () => server.detector.stats().spans[SpanReceivedResult.ACCEPTED];

  it('decodes OTLP/JSON bodies of decreasing sizes, one after another on one connection, each whole and alone', async () => {
    const before = accepted();
    for (const [tag, n] of [
      ['json-long', 400],
      ['json-short', 1],
      ['json-mid', 20],
    ] as const) {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(otlpJson(terminals(tag, n), 'svc-pool')),
      });
      expect([res.status, res.headers.get('content-type'), await res.text()]).toEqual([200, 'application/json', '{}']);
    }
    expect(accepted() - before).toBe(421);
    expect(server.detector.stats().spans[SpanReceivedResult.INVALID]).toBe(0);
  });

  it('decodes OTLP/protobuf bodies of decreasing sizes, each whole and alone', async () => {
    const before = accepted();
    for (const [tag, n] of [
      ['pb-long', 150],
      ['pb-short', 1],
    ] as const) {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-protobuf' },
        body: encodeRequest(terminals(tag, n)),
      });
      expect([res.status, res.headers.get('content-type'), (await res.arrayBuffer()).byteLength]).toEqual([
        200,
        'application/x-protobuf',
        0,
      ]);
    }
    expect(accepted() - before).toBe(151);
  });

  /** POSTs `body` without a declared length, in `pieces` writes (chunked transfer encoding). */
  const postChunked = (body: Buffer, pieces: number, headers: Record<string, string>) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(url, { method: 'POST', headers: { ...headers, 'transfer-encoding': 'chunked' } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      });
      req.on('error', reject);
      const step = Math.ceil(body.length / pieces);
      for (let at = 0; at < body.length; at += step) req.write(body.subarray(at, at + step));
      req.end();
    });

  it('decodes undeclared (chunked) bodies of decreasing sizes, each grown past its first buffer whole and alone', async () => {
    const before = accepted();
    // 400 terminals are about 150 KB of JSON: the body's buffer (64 KiB at first) doubles twice.
    for (const [tag, n, pieces] of [
      ['chunked-long', 400, 37],
      ['chunked-short', 1, 1],
      ['chunked-mid', 20, 3],
    ] as const) {
      const body = Buffer.from(JSON.stringify(otlpJson(terminals(tag, n), 'svc-pool')));
      expect(await postChunked(body, pieces, { 'content-type': 'application/json' })).toEqual({
        status: 200,
        text: '{}',
      });
    }
    expect(accepted() - before).toBe(421);
    expect(server.detector.stats().spans[SpanReceivedResult.INVALID]).toBe(0);
  });

  it('decodes gzip bodies, chunked and declared, whole', async () => {
    const before = accepted();
    const body = gzipSync(JSON.stringify(otlpJson(terminals('gz-chunked', 300), 'svc-pool')));
    const headers = { 'content-type': 'application/json', 'content-encoding': 'gzip' };
    expect(await postChunked(body, 5, headers)).toEqual({ status: 200, text: '{}' });
    const declared = gzipSync(JSON.stringify(otlpJson(terminals('gz-declared', 30), 'svc-pool')));
    const res = await fetch(url, { method: 'POST', headers, body: declared });
    expect([res.status, await res.text()]).toEqual([200, '{}']);
    expect(accepted() - before).toBe(330);
  });
});

describe('serve: an undeclared body past --max-body', () => {
  it('is refused with 413 once it passes the limit, its buffer never grown beyond it', async () => {
    const server = await startServer({ port: 0, grpcPort: false, metricsPort: 0, output: null, maxBodyBytes: 100_000 });
    try {
      const url = `http://127.0.0.1:${server.httpPort}/v1/traces`;
      const res = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (r) => {
          let text = '';
          r.setEncoding('utf8');
          r.on('data', (c: string) => (text += c));
          r.on('end', () => resolve({ status: r.statusCode!, text }));
        });
        req.on('error', reject);
        // 30 KB a write: the third passes the first buffer (64 KiB), the fourth the limit.
        for (let i = 0; i < 4; i++) req.write(Buffer.alloc(30_000, ' '));
        req.end();
      });
      expect(res.status).toBe(413);
      expect(JSON.parse(res.text)).toEqual({ code: 8, message: 'body exceeds 100000 bytes (--max-body)' });
      await vi.waitFor(() => expect(server.inflight.used).toBe(0));
    } finally {
      await server.close();
    }
  });
});
