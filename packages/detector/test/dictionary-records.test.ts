import { ErrorType, FindingKind, RequestRecovery } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { Detector, type Finding, type SpanRecord } from '../src/index.js';
import { T0, requestEnded, seedScenario, terminal } from './helpers/spans.js';
import { workload } from './helpers/workload.js';

/*
 * A door may build a span's attributes as a null-prototype record (a dictionary): the core reads its
 * attributes by name, where it reads a plain record's in one pass over its keys (marks.ts). Both must
 * decide alike, on every path that reads the session, request id, method or stream id.
 */

function run(spans: SpanRecord[]): { results: string[]; findings: Finding[] } {
  const findings: Finding[] = [];
  const detector = new Detector({ onFinding: (f) => findings.push(f), clock: () => 0, maxRequests: 64 });
  const results = spans.map((s) => detector.ingest(s));
  detector.flush();
  return { results, findings };
}

const dictionaryOf = (s: SpanRecord): SpanRecord => ({
  ...s,
  attributes: Object.assign(Object.create(null) as SpanRecord['attributes'], s.attributes),
});

describe('null-prototype attribute records', () => {
  it('give the same results and findings as plain records: streams, evictions and given-up requests', () => {
    const spans = workload(200, 'd', 3);
    const req = (n: number) => ({ session: `s-${n}`, request: n, service: 'svc' });
    spans.push(...seedScenario(req(1), 3), terminal(req(2), T0 + 100_000, 'X'));
    // Given up after the stream ended without the result (lost_result), cancelled, and one with no session.
    spans.push(...seedScenario(req(3), 2));
    spans.push(
      requestEnded(req(3), T0 + 200_000, ErrorType.TIMEOUT, { recovery: RequestRecovery.RESUMED }),
      requestEnded(req(4), T0 + 200_100, ErrorType.CANCELLED),
      requestEnded(req(5), T0 + 200_200, ErrorType.STREAM_BROKEN, { recovery: RequestRecovery.NO_EVENT_ID }),
    );
    // Delivered again, for the duplicates.
    spans.push(...spans.slice(0, 100));
    const plain = run(spans);
    expect(run(spans.map(dictionaryOf))).toEqual(plain);
    expect(plain.results).toContain('duplicate');
    expect(plain.findings.length).toBeGreaterThan(10);
    expect(new Set(plain.findings.map((f) => f.kind))).toContain(FindingKind.LOST_RESULT);
  });
});
