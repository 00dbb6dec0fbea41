import { createHash } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, OPTION_SPECS, resolveConfig } from '../src/index.js';
import { OtlpDecodeError, type Finding } from '@resumewatch/detector';
import { IdBounder, MIN_ID_BYTES } from '../../detector/src/doors/bounded-ids.js';
import { FindingLog } from '../src/doors/finding-log.js';
import { FindingsOutput } from '../src/doors/findings-output.js';
import { InflightBudget, Reservation } from '../src/doors/inflight.js';
import { checkJsonDepth } from '../../detector/src/otlp/json-depth.js';

describe('IdBounder', () => {
  const ids = new IdBounder(64);

  it('keeps a value within the bound as it is', () => {
    const s = 'x'.repeat(64);
    expect(ids.bound(s)).toBe(s);
    expect(ids.bound('é'.repeat(32))).toBe('é'.repeat(32));
  });

  it('cuts a longer value at a character boundary to exactly the bound, with a hash of the whole value', () => {
    const a = ids.bound('a'.repeat(65));
    expect(a).toBe(`${'a'.repeat(47)}~${createHash('sha256').update('a'.repeat(65)).digest('hex').slice(0, 16)}`);
    expect(Buffer.byteLength(a)).toBe(64);
    // Same value, same result; values that differ only past the cut stay distinct.
    expect(ids.bound('a'.repeat(65))).toBe(a);
    expect(ids.bound('a'.repeat(66))).not.toBe(a);
    // Two-byte characters are never split: 23 of them (46 bytes) fit before the suffix, 24 do not.
    const e = ids.bound('é'.repeat(40));
    expect(e.startsWith(`${'é'.repeat(23)}~`)).toBe(true);
    expect(Buffer.byteLength(e)).toBe(63);
    // Neither are surrogate pairs.
    const emoji = ids.bound('😀'.repeat(20));
    expect(emoji).toMatch(/^(😀){11}~[0-9a-f]{16}$/);
  });

  it('never goes below its minimum', () => {
    expect(new IdBounder(1).maxBytes).toBe(MIN_ID_BYTES);
  });
});

function finding(i: number, session = `s-${i}`): Finding {
  return {
    kind: 'signature',
    service: 'svc',
    session_id: session,
    request_id: String(i),
    trace_id: 'a'.repeat(32),
    first_time_unix_ms: 1,
    last_time_unix_ms: 2,
    span_ids: [],
  } as Finding;
}

describe('FindingLog', () => {
  it('keeps the newest `capacity` findings, oldest first', () => {
    const log = new FindingLog(3, 1 << 20);
    for (let i = 0; i < 5; i++) log.push(finding(i), JSON.stringify(finding(i)));
    expect(log.findings().map((f) => f.request_id)).toEqual(['2', '3', '4']);
    expect((JSON.parse(log.toJson().body) as Finding[]).map((f) => f.request_id)).toEqual(['2', '3', '4']);
  });

  it('answers with the newest findings that fit in maxBytes, as valid JSON', () => {
    const one = JSON.stringify(finding(0)).length;
    const log = new FindingLog(100, 2 + 3 * (one + 1));
    for (let i = 0; i < 10; i++) log.push(finding(i), JSON.stringify(finding(i)));
    const { body, omitted } = log.toJson();
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(2 + 3 * (one + 1));
    expect((JSON.parse(body) as Finding[]).map((f) => f.request_id)).toEqual(['7', '8', '9']);
    expect(omitted).toBe(7);
    expect(new FindingLog(10, 100).toJson()).toEqual({ body: '[]', omitted: 0 });
  });
});

describe('FindingsOutput', () => {
  it('writes the findings of one turn in one write, and drops what would pass the bound', async () => {
    const out = new PassThrough({ highWaterMark: 16 });
    let dropped = 0;
    const o = new FindingsOutput(out, 10, (n) => (dropped += n));
    o.write('{"a":1}');
    o.write('{"b":2}');
    expect(dropped).toBe(1);
    await Promise.resolve();
    expect(out.read()?.toString()).toBe('{"a":1}\n');
  });
});

describe('in-flight budget', () => {
  it('reserves up to its max, releases what a request held, once', () => {
    const b = new InflightBudget(100);
    const r = new Reservation(b);
    expect(r.take(60)).toBe(true);
    expect(r.take(50)).toBe(false);
    expect(b.used).toBe(60);
    r.releaseAll();
    r.releaseAll();
    expect(b.used).toBe(0);
    expect(b.peak).toBe(60);
  });
});

describe('checkJsonDepth', () => {
  it('accepts OTLP nesting and counts no bracket inside strings', () => {
    expect(() => checkJsonDepth(Buffer.from('{"a":[{"b":"[[[[[[\\"[[[["}]}'), 3)).not.toThrow();
  });

  it('throws at the first level too deep, with its offset', () => {
    expect(() => checkJsonDepth(Buffer.from('{"a":[[[1]]]}'), 3)).toThrow(
      new OtlpDecodeError('malformed OTLP/JSON: nesting deeper than 3 levels at byte 7'),
    );
  });

  it('stops scanning at once: of 64 MiB of "[", it reads 65 bytes', () => {
    const bytes = new Uint8Array(64 * 1024 * 1024).fill('['.charCodeAt(0));
    let reads = 0;
    const counted = new Proxy(bytes, {
      get(target, key) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key);
      },
    });
    expect(() => checkJsonDepth(counted, 64)).toThrow(/deeper than 64 levels at byte 64/);
    expect(reads).toBe(65);
  });
});

describe('configuration of the bounds', () => {
  it('reads every new option from flags and environment, with its default otherwise', () => {
    const c = resolveConfig(
      {
        'max-id-bytes': '128',
        'findings-bytes': '65536',
        'stdout-buffer': '4096',
        'max-inflight': '1048576',
        'retry-after': '2s',
        'header-timeout': '5s',
        'idle-timeout': '500ms',
        'max-json-depth': '32',
        'max-connections': '10',
        'state-file': '/tmp/x.state',
        grace: '3s',
      },
      { RESUMEWATCH_SNAPSHOT_INTERVAL: '1m' },
    );
    expect(c).toMatchObject({
      maxIdBytes: 128,
      findingsMaxBytes: 65536,
      stdoutBufferBytes: 4096,
      maxInflightBytes: 1048576,
      retryAfterMs: 2000,
      headerTimeoutMs: 5000,
      idleTimeoutMs: 500,
      maxJsonDepth: 32,
      maxConnections: 10,
      stateFile: '/tmp/x.state',
      snapshotIntervalMs: 60_000,
      graceMs: 3000,
    });
    expect(resolveConfig({}, {})).toEqual(DEFAULT_CONFIG);
    expect(DEFAULT_CONFIG).toMatchObject({
      maxIdBytes: 256,
      findingsMaxBytes: 4 * 1024 * 1024,
      stdoutBufferBytes: 1024 * 1024,
      maxInflightBytes: 512 * 1024 * 1024,
      stateFile: undefined,
      snapshotIntervalMs: 30_000,
      graceMs: 5_000,
    });
  });

  it('has one option spec (flag, environment variable, help) for every key of the configuration', () => {
    expect(OPTION_SPECS.map((s) => s.key).sort()).toEqual(Object.keys(DEFAULT_CONFIG).sort());
  });
});
