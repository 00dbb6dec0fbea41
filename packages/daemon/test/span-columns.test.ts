import { describe, it } from 'vitest';
import {
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_SERVER_ADDRESS,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_STREAM_RESUME,
} from '@resumewatch/semconv';
import type { AttributeValue, SpanRecord } from '@resumewatch/detector';
import { StoresAndModel, rng } from './helpers/columns-model.js';

const NAMES = ['tools/call work', SPAN_REQUEST_TERMINAL, SPAN_STREAM_RESUME, SPAN_SESSION_REATTACH];
const IDS = [
  '00000000000000ff',
  'ffffffffffffffff',
  'a1b2c3d4e5f60718',
  'ABCDEF0123456789',
  'short',
  '',
  'zz00000000000000',
];

function randomSpan(next: () => number, n: number): SpanRecord {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const attributes: Record<string, AttributeValue> = {
    [ATTR_MCP_SESSION_ID]: 's',
    [ATTR_JSONRPC_REQUEST_ID]: 1,
  };
  if (next() < 0.5) attributes[ATTR_MCP_STREAM_ID] = `st-${n}`;
  if (next() < 0.3) attributes[ATTR_HTTP_RESPONSE_STATUS_CODE] = pick([200, 404, -0, 1.5]);
  if (next() < 0.3) attributes[ATTR_MCP_TERMINAL_DUPLICATE] = next() < 0.5;
  if (next() < 0.3) attributes[ATTR_MCP_RESUME_OUTCOME] = pick(['continuation', 'empty_replay', '']);
  if (next() < 0.2) attributes[ATTR_MCP_METHOD_NAME] = 'tools/call';
  if (next() < 0.1) attributes[ATTR_SERVER_ADDRESS] = 'h';
  if (next() < 0.1) attributes[ATTR_SERVER_ADDRESS] = undefined as unknown as string;
  const start = next() < 0.1 ? -0 : 1_700_000_000_000 + n + next();
  return {
    traceId: '1'.repeat(32),
    spanId: next() < 0.7 ? (n * 7919).toString(16).padStart(16, '0').slice(-16) : pick(IDS),
    name: pick(NAMES),
    kind: pick([1, 2, 3] as const),
    startTimeUnixMs: start,
    endTimeUnixMs: start + 2,
    attributes,
    service: 'svc',
  };
}

describe('spans of requests held in columns', () => {
  it('hold, drop, evict and give back what HeldRequests of timeline events does, at every step', () => {
    for (const [seed, windowBytes, heldBytes, keys] of [
      [1, 10 * 512, 4_000, 4],
      [2, 40 * 512 + 100, 20_000, 12],
      [3, 300, 150, 3],
      [4, 100 * 512, 100_000, 3],
      [5, 512, 1_000, 2],
    ] as const) {
      const next = rng(seed);
      // The evidence's two stores, as it had them (objects) and as it has them (columns).
      const stores = new StoresAndModel(windowBytes, heldBytes);
      for (let n = 0; n < 3_000; n++) {
        const key = `k${Math.floor(next() * keys)}`;
        stores.step(key, key, next(), { take: 0.04, hold: 0.1, get: 0.13 }, () => randomSpan(next, n));
      }
      for (let k = 0; k < keys; k++) stores.drain(`k${k}`, `k${k}`);
    }
  });
});
