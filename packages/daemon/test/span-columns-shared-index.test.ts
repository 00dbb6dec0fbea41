import { describe, expect, it } from 'vitest';
import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  SPAN_REQUEST_TERMINAL,
} from '@resumewatch/semconv';
import type { SpanRecord } from '@resumewatch/detector';
import { RequestIndex, SpanColumns } from '../src/page/span-columns.js';

/** A small deterministic generator (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const spanOf = (n: number): SpanRecord => ({
  traceId: '1'.repeat(32),
  spanId: (n * 7919).toString(16).padStart(16, '0').slice(-16),
  name: SPAN_REQUEST_TERMINAL,
  kind: 1,
  startTimeUnixMs: 1_700_000_000_000 + n,
  endTimeUnixMs: 1_700_000_000_002 + n,
  attributes: { [ATTR_MCP_SESSION_ID]: 's', [ATTR_JSONRPC_REQUEST_ID]: 1, [ATTR_MCP_STREAM_ID]: `st-${n}` },
  service: 'svc',
});

/**
 * The evidence's two stores share one index of requests (a key in at most one store): every read, count
 * and membership must be what two stores with an index each give, under caps that evict throughout,
 * whatever the order of appends, moves, takes and touches, with keys made anew each time (equal, not the
 * same string) and reused.
 */
describe('span columns: two stores sharing one index', () => {
  it('hold, move, evict and read as two stores of their own', () => {
    for (const [seed, windowBytes, heldBytes, keys] of [
      [1, 10 * 512, 4_000, 4],
      [2, 40 * 512 + 100, 20_000, 12],
      [3, 300, 150, 3],
      [4, 100 * 512, 100_000, 30],
    ] as const) {
      const next = rng(seed);
      const index = new RequestIndex();
      const window = new SpanColumns(windowBytes, 8, 3, 512, { index, tag: 0 });
      const held = new SpanColumns(heldBytes, 12, 5, undefined, { index, tag: 1 });
      const ownWindow = new SpanColumns(windowBytes, 8, 3, 512);
      const ownHeld = new SpanColumns(heldBytes, 12, 5, undefined);
      for (let n = 0; n < 4_000; n++) {
        // A key made anew (a new string each time) or the one of the step before.
        const key = `k${Math.floor(next() * keys)}-${'x'.repeat(n % 3)}`.slice(0, -(n % 3) || undefined);
        const what = next();
        if (what < 0.04) {
          expect(window.take(key)).toEqual(ownWindow.take(key));
        } else if (what < 0.1) {
          if (held.has(key)) held.touch(key);
          else held.moveIn(key, window);
          if (ownHeld.has(key)) ownHeld.touch(key);
          else ownHeld.moveIn(key, ownWindow);
        } else if (what < 0.13) {
          expect(held.get(key)).toEqual(ownHeld.get(key));
          expect(window.get(key)).toEqual(ownWindow.get(key));
        } else {
          const span = spanOf(n);
          if (held.has(key)) held.append(key, span);
          else window.append(key, span);
          if (ownHeld.has(key)) ownHeld.append(key, span);
          else ownWindow.append(key, span);
        }
        expect([window.bytes, window.size, window.has(key), held.bytes, held.size, held.has(key)]).toEqual([
          ownWindow.bytes,
          ownWindow.size,
          ownWindow.has(key),
          ownHeld.bytes,
          ownHeld.size,
          ownHeld.has(key),
        ]);
      }
      for (let k = 0; k < keys; k++) {
        expect(held.get(`k${k}-`)).toEqual(ownHeld.get(`k${k}-`));
        expect(window.get(`k${k}-`)).toEqual(ownWindow.get(`k${k}-`));
      }
    }
  });
});
