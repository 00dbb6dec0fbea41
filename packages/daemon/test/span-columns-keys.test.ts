// SpanColumns' own key table: keys as their parts (SpanKey), found by a hash computed in JavaScript and
// told apart part by part. Its hash can be cut to a few bits (the constructor's hashMask), so that keys
// collide as often as wanted: the stores must give back what the reference model (HeldRequests, keyed by
// the keys' strings) does whatever the hash, and stay within their caps, the oldest request out first.
import { describe, expect, it } from 'vitest';
import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  FindingKind,
  SPAN_STREAM_RESUME,
} from '@resumewatch/semconv';
import type { Finding, SpanRecord } from '@resumewatch/detector';
import { StoresAndModel, rng } from './helpers/columns-model.js';
import { SpanColumns } from '../src/page/span-columns.js';
import {
  KEY_REQUEST,
  KEY_SESSION,
  KEY_TASK,
  KEY_TRACE,
  SpanKey,
  keyOf,
  requestId,
  setKey,
} from '../src/page/span-key.js';
import { RequestKeys, SpanScan, findingKey, findingParts, keyText } from '../src/page/timeline-event.js';

const LONG = 'x'.repeat(100_000);
/**
 * Parts of keys that differ only where a string key's concatenation would hide it, that differ in the last
 * character of a long id, a number and its text (one id), a number and another spelling of it (not one),
 * a lone surrogate, and ids the doors let through (256 bytes by default) and far longer ones.
 */
const SERVICES = ['svc', 'sv', 'svc2', '', '\ud800', 'é'];
const SESSIONS = ['s1', 'cs1', '1', `${LONG}a`, `${LONG}b`, 's'.repeat(256), '\u0001c', 'ß'];
const REQUESTS: (string | number)[] = [
  1,
  '1',
  '01',
  2,
  1e9,
  '1000000000',
  -1,
  '-1',
  1.5,
  '1.5',
  999_999_999,
  'x',
  `${LONG}1`,
];

function randomKey(next: () => number): SpanKey {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const what = next();
  // A new key object each time or one filled again (as RequestKeys does): the table copies the parts.
  if (what < 0.2) return keyOf(KEY_REQUEST, pick(SERVICES), pick(SESSIONS), requestId(pick(REQUESTS)));
  if (what < 0.7) return keyOf(KEY_REQUEST, pick(SERVICES), pick(SESSIONS), Math.floor(next() * 5_000));
  if (what < 0.8) return keyOf(KEY_TRACE, pick(['1'.repeat(32), '2'.repeat(32)]));
  if (what < 0.9) return keyOf(KEY_TASK, pick(SERVICES), pick(SESSIONS));
  return keyOf(KEY_SESSION, pick(SERVICES), pick(SESSIONS));
}

function span(n: number, session: string, request: string | number): SpanRecord {
  return {
    traceId: '1'.repeat(32),
    spanId: (n * 7919).toString(16).padStart(16, '0').slice(-16),
    name: SPAN_STREAM_RESUME,
    kind: 1,
    startTimeUnixMs: 1_700_000_000_000 + n,
    endTimeUnixMs: 1_700_000_000_002 + n,
    attributes: {
      [ATTR_MCP_SESSION_ID]: session,
      [ATTR_JSONRPC_REQUEST_ID]: request,
      ...(n % 3 === 0 ? { [ATTR_MCP_STREAM_ID]: `st-${n}` } : {}),
    },
    service: 'svc',
  };
}

describe("the evidence's key table", () => {
  it('gives back what HeldRequests keyed by strings does, with every hash the same, a few, or all bits', () => {
    for (const [seed, hashMask] of [
      [1, 0],
      [2, 3],
      [3, -1],
    ] as const) {
      const next = rng(seed);
      // More requests than the table's first size (256), so that it grows with keys in it.
      const windowBytes = 2_000 * 512;
      const heldBytes = 60_000;
      const stores = new StoresAndModel(windowBytes, heldBytes, hashMask);
      const keys: SpanKey[] = [];
      while (keys.length < 1_500) keys.push(randomKey(next));
      // Each key's string made once (a long id's is hashed once by the model's map, not at every step).
      const texts = keys.map(keyText);
      for (let n = 0; n < 4_000; n++) {
        const k = Math.floor(next() * keys.length);
        const key = keys[k]!;
        stores.step(key, texts[k]!, next(), { take: 0.03, hold: 0.08, get: 0.1 }, () => span(n, key.b, key.c));
      }
      expect(stores.window.size).toBeGreaterThan(256);
      keys.forEach((key, k) => stores.drain(key, texts[k]!));
      expect(stores.window.size).toBe(0);
    }
  });

  it('stays within its cap with keys that all collide, the least recent request out first', () => {
    for (const hashMask of [0, -1]) {
      const cap = 300 * 512;
      const window = new SpanColumns(cap, 8, 3, 512, hashMask);
      // One key object filled again for each request, as RequestKeys does; two spans a request.
      const key = new SpanKey();
      for (let n = 0; n < 2_000; n++) {
        for (let i = 0; i < 2; i++) window.append(setKey(key, KEY_REQUEST, 'svc', 's1', n), span(n, 's1', n));
        expect(window.bytes).toBeLessThanOrEqual(cap);
        expect(window.size).toBe(Math.min(n + 1, 150));
      }
      // The latest 150 requests are held, whole; every one before them is gone.
      for (let n = 0; n < 2_000; n++) {
        const held = window.get(keyOf(KEY_REQUEST, 'svc', 's1', n));
        if (n < 2_000 - 150) expect(held).toBeUndefined();
        else expect(held?.events.length).toBe(2);
      }
      // Taken out in any order (each removal moves its run's later keys back), the rest are still found.
      for (let n = 2_000 - 1; n >= 2_000 - 150; n -= 2)
        expect(window.take(keyOf(KEY_REQUEST, 'svc', 's1', n))).toBeDefined();
      for (let n = 2_000 - 2; n >= 2_000 - 150; n -= 2)
        expect(window.has(keyOf(KEY_REQUEST, 'svc', 's1', n))).toBe(true);
      expect(window.size).toBe(75);
    }
  });

  it('has keys of equal parts equal, their hashes too, exactly when their strings are', () => {
    const keys: SpanKey[] = [];
    for (const tag of [KEY_REQUEST, KEY_TASK, KEY_SESSION, KEY_TRACE])
      for (const service of SERVICES)
        for (const session of SESSIONS)
          for (const request of tag === KEY_REQUEST ? REQUESTS : [''])
            keys.push(keyOf(tag, service, tag === KEY_TRACE ? '' : session, request === '' ? '' : requestId(request)));
    const same = (a: SpanKey, b: SpanKey) => a.tag === b.tag && a.a === b.a && a.b === b.b && a.c === b.c;
    const texts = keys.map(keyText);
    let equalPairs = 0;
    for (let i = 0; i < keys.length; i++)
      for (let j = 0; j < keys.length; j++) {
        const equal = texts[i] === texts[j];
        if (same(keys[i]!, keys[j]!) !== equal) expect([keys[i], keys[j], equal]).toBeUndefined();
        if (equal && keys[i]!.hash !== keys[j]!.hash) expect([keys[i], keys[j]]).toBeUndefined();
        if (equal && i !== j) equalPairs++;
      }
    // Some keys of different parts before canonical ids (1 and '1', 1e9 and '1000000000') are one.
    expect(equalPairs).toBeGreaterThan(0);
    // A number and its decimal text are one request id, as the string keys spelled both String(id).
    for (const request of REQUESTS) expect(String(requestId(request))).toBe(String(request));
  });

  it("gives a finding the key of its request's spans, its hash included, whichever span came last", () => {
    const finding = (service: string, session: string, request: string, more: Partial<Finding> = {}) =>
      ({
        kind: FindingKind.LOST_RESULT,
        service,
        session_id: session,
        request_id: request,
        trace_id: '2'.repeat(32),
        ...more,
      }) as Finding;
    const keys = new RequestKeys();
    const scan = new SpanScan();
    const spans = SESSIONS.flatMap((session) => REQUESTS.map((request, n) => span(n, session, request)));
    for (const s of spans) {
      scan.read(s.attributes);
      const key = keys.requestParts(s, scan)!;
      const [hash, text] = [key.hash, keyText(key)];
      const request = String(s.attributes[ATTR_JSONRPC_REQUEST_ID]);
      const f = finding('svc', String(s.attributes[ATTR_MCP_SESSION_ID]), request);
      // Made from the last span's session (its hash reused) and made afresh: the span's key.
      for (const parts of [keys.findingParts(f), findingParts(f, new SpanKey())]) {
        expect([parts.hash, keyText(parts)]).toEqual([hash, text]);
        expect(keyText(parts)).toBe(findingKey(f));
      }
      // A finding about another session's request, the last span's session remembered: its own key.
      const other = keys.findingParts(finding('svc', 'other', request));
      expect(other.hash).toBe(findingParts(finding('svc', 'other', request), new SpanKey()).hash);
      expect(keyText(other)).toBe(findingKey(finding('svc', 'other', request)));
    }
    // A loop's and a retraction's keys are their strings' too.
    for (const f of [
      finding('svc', 's1', '1', { kind: FindingKind.DEAD_SESSION_LOOP }),
      finding('', '', '', { kind: FindingKind.LISTENING_STREAM_LOOP, client: 'c' }),
      finding('svc', 's1', '1', { first_trace_id: '3'.repeat(32) }),
      finding('svc', '', '1'),
    ])
      expect(keyText(keys.findingParts(f))).toBe(findingKey(f));
  });
});
