import { describe, expect, it } from 'vitest';
import { isValidSpanId, isValidTraceId } from '@opentelemetry/api';
import { PooledIdGenerator } from '../src/pooled-ids.js';

describe('PooledIdGenerator', () => {
  it('cuts valid, distinct ids from its pool, across many refills', () => {
    const ids = new PooledIdGenerator();
    const seen = new Set<string>();
    // 5,000 of each: the 2 KiB pool is refilled about 60 times.
    for (let i = 0; i < 5_000; i++) {
      const span = ids.generateSpanId();
      const traceId = ids.generateTraceId();
      expect(span).toMatch(/^[0-9a-f]{16}$/);
      expect(traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(isValidSpanId(span) && isValidTraceId(traceId)).toBe(true);
      seen.add(span);
      seen.add(traceId);
    }
    expect(seen.size).toBe(10_000);
  });

  it('draws from its source only when the pool runs out, each byte once', () => {
    let draws = 0;
    let counter = 0n;
    // A source that numbers its 8-byte words: every id shows which words of which draw it took.
    const ids = new PooledIdGenerator((pool) => {
      draws++;
      for (let i = 0; i < pool.length; i += 8) pool.writeBigUInt64BE(++counter, i);
    });
    const spans = Array.from({ length: 256 }, () => ids.generateSpanId());
    expect(draws).toBe(1);
    expect(new Set(spans).size).toBe(256);
    expect(spans[0]).toBe('0000000000000001');
    expect(spans[255]).toBe('0000000000000100');
    expect(ids.generateSpanId()).toBe('0000000000000101');
    expect(draws).toBe(2);
    // 8 bytes left of this draw: a trace id (16) takes a new one whole.
    for (let i = 0; i < 254; i++) ids.generateSpanId();
    expect(draws).toBe(2);
    expect(ids.generateTraceId()).toBe('00000000000002010000000000000202');
    expect(draws).toBe(3);
  });

  it('never gives an all-zero id (invalid in W3C trace context)', () => {
    const ids = new PooledIdGenerator((pool) => pool.fill(0));
    expect(ids.generateSpanId()).toBe('0000000000000001');
    expect(ids.generateTraceId()).toBe('00000000000000000000000000000001');
    expect(isValidSpanId(ids.generateSpanId())).toBe(true);
  });
});
