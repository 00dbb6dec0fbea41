import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME, FindingKind, FindingRecord, StormEnd } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { ResumewatchSpanProcessor, type Finding } from '../src/index.js';
import { emit } from './helpers/otlp.js';
import { seedScenario, terminal } from './helpers/spans.js';

describe('ResumewatchSpanProcessor', () => {
  it('detects in-process, as each span ends, with a real tracer provider', async () => {
    const findings: Finding[] = [];
    const processor = new ResumewatchSpanProcessor({ onFinding: (f) => findings.push(f), tickMs: 0 });
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'in-process' }),
      spanProcessors: [processor],
    });
    const r = { session: 'p-1', request: 5 };
    emit(provider, [terminal(r, Date.now(), 'A')]);
    expect(findings).toEqual([]);
    emit(provider, [terminal(r, Date.now() + 5, 'B', true)]);
    expect(findings.map((f) => f.kind)).toEqual([FindingKind.DUPLICATE_TERMINAL]);
    emit(provider, seedScenario({ session: 'p-2', request: 1 }, 3, Date.now()));
    const ofP2 = findings.filter((f) => f.session_id === 'p-2');
    const kinds = ofP2
      .filter((f) => f.record === undefined)
      .map((f) => f.kind)
      .sort();
    expect(kinds).toEqual(
      [
        FindingKind.DUPLICATE_TERMINAL,
        FindingKind.RECONNECT_STORM,
        FindingKind.RESUME_AFTER_TERMINAL,
        FindingKind.SIGNATURE,
      ].sort(),
    );
    // The storm's end comes as a record of its own, after the signature.
    expect(ofP2.filter((f) => f.record !== undefined)).toMatchObject([
      { kind: FindingKind.RECONNECT_STORM, record: FindingRecord.STORM_ENDED, ended_by: StormEnd.EVICTED, attempts: 4 },
    ]);
    expect(findings[0]).toMatchObject({ service: 'in-process', session_id: 'p-1', request_id: '5' });
    expect(findings[0]!.trace_id).toMatch(/^[0-9a-f]{32}$/);
    await provider.shutdown();
  });
});
