import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME, FindingKind } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { ResumewatchSpanProcessor, type Finding } from '../src/index.js';
import { emit } from './helpers/otlp.js';
import { terminal } from './helpers/spans.js';

describe('ResumewatchSpanProcessor bounds what it keeps', () => {
  it('cuts and hashes session ids and service names past maxIdBytes, as serve does', async () => {
    const findings: Finding[] = [];
    const processor = new ResumewatchSpanProcessor({ onFinding: (f) => findings.push(f), tickMs: 0, maxIdBytes: 64 });
    const service = 'svc-'.padEnd(100_000, 'v');
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: service }),
      spanProcessors: [processor],
    });
    const r = { session: 'p-'.padEnd(1_000_000, 's'), request: 1 };
    emit(provider, [terminal(r, Date.now(), 'A'), terminal(r, Date.now() + 5, 'B', true)]);
    expect(findings.map((f) => f.kind)).toEqual([FindingKind.DUPLICATE_TERMINAL]);
    expect(Buffer.byteLength(findings[0]!.session_id)).toBe(64);
    expect(findings[0]!.session_id).toMatch(/^p-s{45}~[0-9a-f]{16}$/);
    expect(findings[0]!.service).toMatch(/^svc-v{43}~[0-9a-f]{16}$/);
    await provider.shutdown();
  });
});
