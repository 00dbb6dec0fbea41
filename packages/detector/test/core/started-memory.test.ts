// The sessions whose start was counted outlive each session's DELETE (a session seen from both sides
// counts once, for as long as retention): what each costs is what the gateway keeps per ended session.
// Measured on the heap, after full GCs.
import {
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_SESSION_ID,
  METHOD_INITIALIZE,
} from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { heldBytes as held } from '../helpers/heap.js';
import { Detector, type SpanRecord } from '../../src/index.js';
import { T0 } from '../helpers/spans.js';

/**
 * The text as one flat string: a string built by concatenation is flattened when it is first read (the
 * detector hashes it), which would free its parts during the measure.
 */
const flat = (s: string): string => Buffer.from(s, 'latin1').toString('latin1');

/** An initialize answered with `session`, from the client's side (3) or the server's (2). */
function initialize(t: number, session: string, kind: SpanRecord['kind'], spanId: string): SpanRecord {
  const attributes = {
    [ATTR_MCP_METHOD_NAME]: METHOD_INITIALIZE,
    [ATTR_JSONRPC_REQUEST_ID]: 0,
    [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
    [ATTR_MCP_SESSION_ID]: session,
  };
  const traceId = '0'.repeat(32);
  return {
    traceId,
    spanId,
    name: 'mcp.client',
    kind,
    startTimeUnixMs: t,
    endTimeUnixMs: t + 5,
    attributes,
    service: 'client',
  };
}

describe('sessions started: memory', () => {
  it('a started session costs under 64 bytes (46 at this count; a key string and a Map entry took 160)', () => {
    const n = 32_768;
    let started = 0;
    const quiet = () => {};
    const detector = new Detector({
      events: {
        span: quiet,
        terminal: quiet,
        resume: quiet,
        reattach: quiet,
        stormFinalized: quiet,
        serverDefect: quiet,
        listeningResume: quiet,
        request: quiet,
        negotiationRefused: quiet,
        sessionStarted: () => void started++,
      },
    });
    // The spans and their session ids exist before the measure: only what the detector keeps is counted.
    const spans: SpanRecord[] = [];
    for (let i = 0; i < 2 * n; i++)
      spans.push(
        initialize(T0 + i, flat(`session-${i % n}-${'x'.repeat(24)}`), i < n ? 3 : 2, i.toString(16).padStart(16, '0')),
      );
    // Warm: the code the measure runs is compiled first (sessions of their own, counted apart).
    for (let i = 0; i < 1000; i++)
      detector.ingest(initialize(T0, `warm-${i}`, 3, `f${i.toString(16).padStart(15, '0')}`));
    const before = held();
    for (let i = 0; i < n; i++) detector.ingest(spans[i]!);
    const perSession = (held() - before) / n;
    // Still held and still answering: the server's side of each session counts no second start.
    for (let i = n; i < 2 * n; i++) detector.ingest(spans[i]!);
    expect(started).toBe(n + 1000);
    expect(perSession).toBeLessThan(64);
  });
});
