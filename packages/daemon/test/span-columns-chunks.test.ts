import { describe, expect, it } from 'vitest';
import {
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
} from '@resumewatch/semconv';
import type { AttributeValue, SpanRecord } from '@resumewatch/detector';
import { HeldRequests, eventBytes } from './helpers/held-requests.js';
import { SpanColumns } from '../src/page/span-columns.js';
import { timelineEvent, type TimelineEvent } from '../src/page/timeline-event.js';

/** Span n of request r, its attributes varying with n so that every slot's values differ. */
function span(r: number, n: number): SpanRecord {
  const attributes: Record<string, AttributeValue> = {
    [ATTR_MCP_SESSION_ID]: `s-${r}`,
    [ATTR_JSONRPC_REQUEST_ID]: n,
  };
  if (n % 2 === 0) attributes[ATTR_MCP_STREAM_ID] = `st-${n}`;
  if (n % 3 === 0) attributes[ATTR_HTTP_RESPONSE_STATUS_CODE] = 200 + (n % 7);
  return {
    traceId: '1'.repeat(32),
    spanId: n.toString(16).padStart(16, '0'),
    name: 'tools/call work',
    kind: 2,
    startTimeUnixMs: 1_700_000_000_000 + n,
    endTimeUnixMs: 1_700_000_000_002 + n,
    attributes,
    service: 'svc',
  };
}

const view = (h: { events: TimelineEvent[]; bytes: number; dropped: number } | undefined) =>
  h === undefined ? undefined : { events: h.events, bytes: h.bytes, dropped: h.dropped };

describe('spans of requests held in columns, past one chunk of values', () => {
  it('give back what HeldRequests does with thousands of slots, freed and filled again', () => {
    // Caps that hold a few thousand slots in each store, so that their values span several chunks.
    const windowBytes = 3_000 * 512;
    const heldBytes = 2_500 * 200;
    const window = new SpanColumns(windowBytes, 16, 4, 512);
    const held = new SpanColumns(heldBytes, 24, 6, undefined);
    const windowObjects = new HeldRequests<TimelineEvent>(windowBytes, 16, 4, () => 512);
    const heldObjects = new HeldRequests<TimelineEvent>(heldBytes, 24, 6, eventBytes);
    const requests = 600;
    for (let n = 0; n < 12_000; n++) {
      const r = (n * 7) % requests;
      const key = `k${r}`;
      const s = span(r, n);
      if (heldObjects.has(key)) {
        heldObjects.append(key, timelineEvent(s));
        held.append(key, s);
      } else {
        windowObjects.append(key, timelineEvent(s));
        window.append(key, s);
      }
      // A finding for one request in 5: its window moves to the evidence.
      if (n % 50 === 49 && r % 5 === 0 && !heldObjects.has(key)) {
        const taken = windowObjects.take(key);
        const events = taken ? taken.events : [];
        let bytes = 0;
        for (const event of events) bytes += eventBytes(event);
        heldObjects.put(key, { events, bytes, dropped: taken?.dropped ?? 0 });
        held.moveIn(key, window);
      }
    }
    expect([window.bytes, window.size, held.bytes, held.size]).toEqual([
      windowObjects.bytes,
      windowObjects.size,
      heldObjects.bytes,
      heldObjects.size,
    ]);
    expect(window.size * 16).toBeGreaterThan(2_048);
    for (let r = 0; r < requests; r++) {
      const a = held.get(`k${r}`);
      expect(view(a)).toEqual(view(heldObjects.get(`k${r}`)));
      if (a) expect(JSON.stringify(a.events)).toBe(JSON.stringify(heldObjects.get(`k${r}`)!.events));
      expect(view(window.take(`k${r}`))).toEqual(view(windowObjects.take(`k${r}`)));
    }
  });
});
