import { SpanReceivedResult } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
});
