import { describe, expect, it } from 'vitest';
import {
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_KIND,
  ATTR_MCP_TERMINAL_DUPLICATE,
  FindingKind,
  SPAN_REQUEST_TERMINAL,
  SPAN_STREAM_RESUME,
  StreamKind,
} from '@resumewatch/semconv';
import type { Finding, SpanRecord } from '@resumewatch/detector';
import { HeldRequests } from './helpers/held-requests.js';
import {
  EventType,
  RequestKeys,
  SpanScan,
  findingKey,
  isReissueFinding,
  isTaskFinding,
  keyText,
  timelineEvent,
} from '../src/page/timeline-event.js';

/** Items counted for 10 bytes each; a request keeps its first 2 and then its latest ones, 4 at most. */
const held = (maxBytes: number) => new HeldRequests<string>(maxBytes, 4, 2, () => 10);

/** The span's request key (RequestKeys.requestParts) spelled as a string (keyText). */
function keyOf(keys: RequestKeys, span: SpanRecord): string | undefined {
  const scan = new SpanScan();
  scan.read(span.attributes);
  const key = keys.requestParts(span, scan);
  return key && keyText(key);
}

describe('the requests the page holds items for', () => {
  it('drops the least recently touched request first when an item passes the byte cap', () => {
    const h = held(50);
    h.append('a', 'a1');
    h.append('b', 'b1');
    h.append('c', 'c1');
    // Touching `a` (an item, or touch()) makes `b` the least recent.
    h.append('a', 'a2');
    h.touch('c');
    h.append('d', 'd1');
    expect([h.has('a'), h.has('b'), h.has('c'), h.has('d')]).toEqual([true, true, true, true]);
    h.append('e', 'e1');
    expect([h.has('a'), h.has('b'), h.has('c'), h.has('d'), h.has('e')]).toEqual([true, false, true, true, true]);
    expect(h.bytes).toBe(50);
    // Then `a` (touched before `c`, `d` and `e`), then `c`.
    h.append('e', 'e2');
    expect(h.has('a')).toBe(false);
    h.append('e', 'e3');
    expect(h.has('c')).toBe(true);
    h.append('e', 'e4');
    expect(h.has('c')).toBe(false);
    expect(h.size).toBe(2);
    expect(h.bytes).toBe(50);
  });

  it('answers for the last key looked up as the map does, after each change to it', () => {
    // The last key and its entry are remembered: asked again, evicted, taken, put back, appended anew.
    const h = held(30);
    h.append('a', 'a1');
    expect(h.has('a')).toBe(true);
    expect(h.has('b')).toBe(false);
    h.append('b', 'b1');
    expect(h.has('b')).toBe(true);
    h.append('c', 'c1');
    h.append('c', 'c2');
    // `a` went for c2; asked right after, `c` then `a`.
    expect(h.has('c')).toBe(true);
    expect(h.has('a')).toBe(false);
    expect(h.get('a')).toBeUndefined();
    expect(h.take('b')).toMatchObject({ events: ['b1'] });
    expect(h.has('b')).toBe(false);
    h.put('b', { events: ['b2'], bytes: 10, dropped: 0 });
    expect(h.get('b')).toMatchObject({ events: ['b2'] });
    h.append('a', 'a2');
    expect(h.get('a')).toMatchObject({ events: ['a2'] });
    expect([h.has('a'), h.has('b'), h.has('c'), h.size, h.bytes]).toEqual([true, true, false, 2, 20]);
  });

  it('keeps a request first items and its latest, counting the ones dropped between', () => {
    const h = held(1000);
    for (let i = 1; i <= 7; i++) h.append('a', `a${i}`);
    expect(h.get('a')).toMatchObject({ events: ['a1', 'a2', 'a6', 'a7'], bytes: 40, dropped: 3 });
    expect(h.bytes).toBe(40);
  });

  it('takes a request out, and puts one in as the most recent, trimmed and within the cap', () => {
    const h = held(60);
    h.append('a', 'a1');
    h.append('b', 'b1');
    expect(h.take('a')).toMatchObject({ events: ['a1'], bytes: 10 });
    expect(h.has('a')).toBe(false);
    expect(h.bytes).toBe(10);
    h.put('c', { events: ['c1', 'c2', 'c3', 'c4', 'c5', 'c6'], bytes: 60, dropped: 0 });
    // Trimmed to 4 items (40 bytes); with b's 10 the cap holds.
    expect(h.get('c')).toMatchObject({ events: ['c1', 'c2', 'c5', 'c6'], bytes: 40, dropped: 2 });
    expect(h.bytes).toBe(50);
    h.append('d', 'd1');
    h.append('d', 'd2');
    // b was the least recent: it goes first, c (put after it) stays.
    expect([h.has('b'), h.has('c'), h.has('d')]).toEqual([false, true, true]);
    expect(h.bytes).toBe(60);
  });

  it('trims the only request left beyond its head when it alone passes the cap', () => {
    const h = new HeldRequests<string>(30, 10, 1, () => 10);
    for (let i = 1; i <= 5; i++) h.append('a', `a${i}`);
    expect(h.get('a')).toMatchObject({ events: ['a1', 'a4', 'a5'], bytes: 30, dropped: 2 });
    expect(h.bytes).toBe(30);
  });
});

describe('the request key of a span', () => {
  const span = (service: string, session: string, request: string | number, kind?: string): SpanRecord => ({
    traceId: '0'.repeat(32),
    spanId: '1'.repeat(16),
    name: SPAN_STREAM_RESUME,
    kind: 1,
    startTimeUnixMs: 0,
    endTimeUnixMs: 0,
    attributes: {
      [ATTR_MCP_SESSION_ID]: session,
      [ATTR_JSONRPC_REQUEST_ID]: request,
      ...(kind ? { [ATTR_MCP_STREAM_KIND]: kind } : {}),
    },
    service,
  });

  it('is the same for the spans of one request, consecutive or not, and differs when any part does', () => {
    const keys = new RequestKeys();
    const fresh = new RequestKeys();
    const a = keyOf(keys, span('svc', 's1', 1))!;
    // Equal parts in new strings (as the decoder makes them): the same key, remembered or made again.
    expect(keyOf(keys, span('svc', `s${'1'}`, 1))).toBe(a);
    expect(keyOf(keys, span('svc', 's1', '1'))).toBe(a);
    expect(keyOf(fresh, span('svc', 's1', 1))).toBe(a);
    const others = [span('svc2', 's1', 1), span('svc', 's2', 1), span('svc', 's1', 2), span('sv', 'cs1', 1)];
    const seen = new Set([a]);
    for (const s of others) {
      const k = keyOf(keys, s)!;
      expect(seen.has(k)).toBe(false);
      seen.add(k);
      expect(keyOf(keys, span('svc', 's1', 1))).toBe(a);
    }
    expect(keyOf(keys, span('svc', 's1', 1, StreamKind.LISTENING))).toBeUndefined();
    expect(keyOf(keys, span('svc', '', 1))).toBeUndefined();
    expect(keyOf(keys, span('svc', 's1', ''))).toBeUndefined();
  });

  it("of a finding is findingKey's, whichever span came last (the last span's key when it is about its request)", () => {
    const finding = (kind: string, service: string, session: string, request: string, more: Partial<Finding> = {}) =>
      ({ kind, service, session_id: session, request_id: request, trace_id: '2'.repeat(32), ...more }) as Finding;
    const kinds = [FindingKind.DUPLICATE_TERMINAL, FindingKind.LOST_RESULT, FindingKind.DEAD_SESSION_LOOP];
    const findings: Finding[] = [];
    for (const kind of kinds)
      for (const [service, session, request] of [
        ['svc', 's1', '1'],
        ['svc', 's1', '2'],
        ['svc', 's2', '1'],
        ['sv', 'cs1', '1'],
        ['', 's1', '1'],
        ['svc', '', '1'],
        ['svc', 'x'.repeat(300), '1'],
      ] as const) {
        findings.push(finding(kind, service, session, request));
        findings.push(finding(kind, service, session, request, { first_trace_id: '3'.repeat(32) }));
        findings.push(finding(kind, service, session, request, { task_id: 't1' }));
      }
    const last = [
      span('svc', 's1', 1),
      span('svc', 's1', '1'),
      span('svc', 's2', 1),
      span('', 's1', 1),
      span('svc', '', 1),
      span('svc', 'x'.repeat(300), 1),
    ];
    const keys = new RequestKeys();
    // The evidence holds a finding's request by findingParts (a task's and a re-issue's by their own keys).
    const byParts = findings.filter((f) => !isTaskFinding(f) && !isReissueFinding(f));
    expect(byParts.length).toBeGreaterThan(findings.length / 3);
    const partsText = (f: Finding) => keyText(keys.findingParts(f));
    // Before any span, and after each: the last span's session hash is reused only when it is the finding's.
    for (const f of byParts) expect(partsText(f)).toBe(findingKey(f));
    for (const s of last) {
      keyOf(keys, s);
      for (const f of byParts) expect(partsText(f)).toBe(findingKey(f));
    }
    expect(partsText(finding(FindingKind.LOST_RESULT, 'svc', 's1', '1'))).toBe(keyOf(keys, span('svc', 's1', 1)));
    // Each key made by a fresh RequestKeys (its prefix made anew) is findingKey's too.
    for (const s of last) {
      const f = finding(FindingKind.LOST_RESULT, s.service, String(s.attributes[ATTR_MCP_SESSION_ID]), '1');
      if (f.session_id !== '' && f.service !== '') expect(keyOf(new RequestKeys(), s)).toBe(findingKey(f));
    }
  });
});

describe('the timeline event of a span', () => {
  it('keeps the shown attributes the span has, in the order the page lists them, and nothing else', () => {
    const attributes = {
      [ATTR_MCP_METHOD_NAME]: 'tools/call',
      [ATTR_JSONRPC_REQUEST_ID]: 3,
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
      [ATTR_MCP_SESSION_ID]: 's',
      [ATTR_MCP_STREAM_ID]: 'st',
      [ATTR_MCP_TERMINAL_DUPLICATE]: true,
      [ATTR_MCP_RESUME_OUTCOME]: undefined as unknown as string,
    };
    const event = timelineEvent({
      traceId: '0'.repeat(32),
      spanId: '2'.repeat(16),
      name: SPAN_REQUEST_TERMINAL,
      kind: 1,
      startTimeUnixMs: 5,
      endTimeUnixMs: 7,
      attributes,
      service: 'svc',
    });
    expect(event).toEqual({
      type: EventType.TERMINAL,
      start: 5,
      end: 7,
      span_id: '2'.repeat(16),
      attributes: {
        [ATTR_MCP_STREAM_ID]: 'st',
        [ATTR_MCP_TERMINAL_DUPLICATE]: true,
        [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
        [ATTR_MCP_METHOD_NAME]: 'tools/call',
      },
    });
    expect(Object.keys(event.attributes)).toEqual([
      ATTR_MCP_STREAM_ID,
      ATTR_MCP_TERMINAL_DUPLICATE,
      ATTR_HTTP_RESPONSE_STATUS_CODE,
      ATTR_MCP_METHOD_NAME,
    ]);
  });
});
