import { describe, expect, it } from 'vitest';
import {
  ATTR_ERROR_TYPE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
  ATTR_SERVER_ADDRESS,
  SPAN_REQUEST_TERMINAL,
} from '@resumewatch/semconv';
import type { AttributeValue, SpanRecord } from '@resumewatch/detector';
import { eventBytes } from './helpers/held-requests.js';
import { SpanColumns } from '../src/page/span-columns.js';
import { SHOWN, timelineEvent } from '../src/page/timeline-event.js';

/**
 * Every kind of string value a span carries (empty, long, Latin-1, beyond the BMP, a lone surrogate,
 * several on one span) reads back as it came from both stores: in the window, moved to the evidence,
 * appended to it directly, and from slots freed and filled again.
 */
const STRINGS = [
  '',
  'tools/call',
  'é ÿ \u0000 \u007f',
  'x'.repeat(64),
  'y'.repeat(65),
  'z'.repeat(40),
  '漢字',
  '\ud83d\ude00 emoji',
  'lone \ud800 surrogate',
  '0123456789abcdef0123456789abcdef01234567',
];
const KEYS = [
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_ERROR_TYPE,
  ATTR_SERVER_ADDRESS,
  ATTR_MCP_RESUME_OUTCOME,
];

function spanWith(n: number, values: (string | number | boolean | undefined)[]): SpanRecord {
  const attributes: Record<string, AttributeValue> = { [ATTR_MCP_SESSION_ID]: 's', [ATTR_JSONRPC_REQUEST_ID]: 1 };
  values.forEach((v, i) => {
    if (v !== undefined) attributes[KEYS[i]!] = v;
  });
  return {
    traceId: '1'.repeat(32),
    spanId: (n * 7919).toString(16).padStart(16, '0'),
    name: SPAN_REQUEST_TERMINAL,
    kind: 1,
    startTimeUnixMs: 1_700_000_000_000 + n,
    endTimeUnixMs: 1_700_000_000_002 + n,
    attributes,
    service: 'svc',
  };
}

describe('span columns: string values', () => {
  it('read back as they came, counted as their events, in the window, moved to the evidence, and in reused slots', () => {
    // Every pair and triple of strings over the keys: some fit a slot's 64 bytes together, some not.
    const spans: SpanRecord[] = [];
    let n = 0;
    for (const a of STRINGS)
      for (const b of STRINGS) {
        spans.push(spanWith(n++, [a, b]));
        spans.push(spanWith(n++, [a, 42, b, true, a, b]));
        spans.push(spanWith(n++, [undefined, a, undefined, b, 1.5, a]));
      }
    const window = new SpanColumns(1 << 30, 1 << 20, 8, 512);
    const held = new SpanColumns(1 << 30, 1 << 20, 8, undefined);
    for (let round = 0; round < 2; round++) {
      spans.forEach((s, i) => window.append(`k${round}-${i % 7}`, s));
      for (let k = 0; k < 7; k++) {
        const expected = spans.filter((_, i) => i % 7 === k).map(timelineEvent);
        const inWindow = window.get(`k${round}-${k}`)!;
        expect(JSON.stringify(inWindow.events)).toBe(JSON.stringify(expected));
        expect(inWindow.events).toEqual(expected);
        held.moveIn(`k${round}-${k}`, window);
        const inHeld = held.get(`k${round}-${k}`)!;
        expect(inHeld.events).toEqual(expected);
        expect(inHeld.bytes).toBe(expected.reduce((sum, e) => sum + eventBytes(e), 0));
        // Appended to the evidence directly too.
        for (const s of spans.filter((_, i) => i % 7 === k)) held.append(`d${round}-${k}`, s);
        expect(held.get(`d${round}-${k}`)!.events).toEqual(expected);
        expect(held.get(`d${round}-${k}`)!.bytes).toBe(inHeld.bytes);
      }
      // The window's slots were all freed by the moves: the next round fills them again with other values.
      expect(window.size).toBe(0);
      spans.reverse();
    }
  });

  it('read back as they came with any number of the shown attributes, beyond the ones a slot keeps inline', () => {
    // Spans of 0 to all of SHOWN's attributes, each set of them a slice of SHOWN from a varying start.
    const spans: SpanRecord[] = [];
    for (let count = 0; count <= SHOWN.length; count++)
      for (let from = 0; from < SHOWN.length; from += 5) {
        const n = spans.length;
        const span = spanWith(n, []);
        for (let i = 0; i < count; i++) {
          const name = SHOWN[(from + i) % SHOWN.length]!;
          (span.attributes as Record<string, AttributeValue>)[name] =
            i % 3 === 0 ? `v${n}.${i}` : i % 3 === 1 ? n + i : i % 2 === 0;
        }
        spans.push(span);
      }
    const window = new SpanColumns(1 << 30, 1 << 20, 8, 512);
    const held = new SpanColumns(1 << 30, 1 << 20, 8, undefined);
    for (let round = 0; round < 3; round++) {
      // Each round the slots freed by the last are filled again, by spans of other counts.
      spans.forEach((s, i) => window.append(`k${round}-${i % 5}`, s));
      for (let k = 0; k < 5; k++) {
        const expected = spans.filter((_, i) => i % 5 === k).map(timelineEvent);
        expect(window.get(`k${round}-${k}`)!.events).toEqual(expected);
        held.moveIn(`k${round}-${k}`, window);
        const inHeld = held.get(`k${round}-${k}`)!;
        expect(inHeld.events).toEqual(expected);
        expect(inHeld.bytes).toBe(expected.reduce((sum, e) => sum + eventBytes(e), 0));
        for (const s of spans.filter((_, i) => i % 5 === k)) held.append(`d${round}-${k}`, s);
        expect(held.get(`d${round}-${k}`)!.events).toEqual(expected);
        held.take(`k${round}-${k}`);
      }
      expect(window.size).toBe(0);
      spans.reverse();
    }
  });
});
