import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import type { HrTime, SpanContext } from '@opentelemetry/api';
import { hrTimeToMilliseconds } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { SpanRecord } from '@resumewatch/detector';
import type { RecordTracer } from '@resumewatch/instrumentation';
import { describe, expect, it } from 'vitest';
import { DetectorTracerProvider } from '../src/detector-tracer.js';

// A record-door span (the gateway's, when its built-in detector is their only reader) ends at the time the
// SDK's span would give it, worked out in one array (no `addHrTimes` of a second), and allocates little from
// its start to its record: no performance offset kept as a double, no `performance.timeOrigin` read (a heap
// number each), no iterator for the start time.

const PARENT: SpanContext = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 };

/** Runs `fn` with Date.now frozen and performance.now reading `perf()`. */
function withClock<T>(date: number, perf: () => number, fn: () => T): T {
  const dateNow = Date.now;
  const perfNow = performance.now;
  Date.now = () => date;
  performance.now = perf;
  try {
    return fn();
  } finally {
    Date.now = dateNow;
    performance.now = perfNow;
  }
}

describe('a record-door span', () => {
  it('ends at the time the SDK’s span gives, for any elapsed time (a carry into the seconds too)', () => {
    const records: SpanRecord[] = [];
    const door = new DetectorTracerProvider((record) => records.push(record), resourceFromAttributes({}));
    const ended: ReadableSpan[] = [];
    const processor: SpanProcessor = {
      onStart: () => {},
      onEnd: (span) => void ended.push(span),
      forceFlush: async () => {},
      shutdown: async () => {},
    };
    const sdk = new BasicTracerProvider({ spanProcessors: [processor] });
    const recordTracer = door.getTracer('t') as RecordTracer;
    const sdkTracer = sdk.getTracer('t');
    const date = 1_764_950_400_123;
    const starts = [1234.5678, 99_999.9999, 0.0004, 5_000_000.25];
    const elapsed = [0, 0.0001, 0.4, 876.5, 999.9999996, 1000, 1234.5678, 86_400_000.000_001, 3.3e9 + 0.7];
    for (const start of starts)
      for (const e of elapsed) {
        let now = start;
        const a = withClock(
          date,
          () => now,
          () => recordTracer.startRecordSpan('s', {}, PARENT, ROOT_CONTEXT),
        );
        const b = withClock(
          date,
          () => now,
          () => sdkTracer.startSpan('s', {}),
        );
        now = start + e;
        withClock(
          date,
          () => now,
          () => a.end(),
        );
        withClock(
          date,
          () => now,
          () => b.end(),
        );
        // The span's own HrTime (its record keeps milliseconds), against the SDK span's.
        expect((a as unknown as { endTime: HrTime }).endTime, `start ${start} elapsed ${e}`).toEqual(
          ended.at(-1)!.endTime,
        );
        expect(records.at(-1)!.endTimeUnixMs).toBe(hrTimeToMilliseconds(ended.at(-1)!.endTime));
      }
    expect(records).toHaveLength(starts.length * elapsed.length);
  });

  it('allocates under 1,450 bytes from its start to its record where V8 runs it unoptimized (about 1,260; before, 1,605)', async () => {
    // Unoptimized, as the gateway's process runs much of a span's code (two spans a request among
    // thousands of functions): there a destructuring makes an iterator and every intermediate array and
    // heap number is allocated. A child process with V8's optimizing compiler off shows it.
    const { stdout } = await run(process.execPath, ['--no-opt', ...SOURCE, '--input-type=module', '-e', CHILD], {
      cwd: packageDir,
    });
    const bytes = Number(/^bytes (\S+)$/m.exec(stdout)?.[1]);
    expect(bytes).toBeGreaterThan(300);
    expect(bytes).toBeLessThan(1450);
  });
});

const packageDir = fileURLToPath(new URL('..', import.meta.url));
/** Workspace packages from their TypeScript sources, as vitest takes them. */
const SOURCE = ['--conditions=@resumewatch/source', '--import', 'tsx'];
const run = promisify(execFile);

/** The child: oneSpan (the same span) 20,000 times to warm up, then 20,000 times under the sampling profiler; prints bytes a span. */
const CHILD = `
import { Session } from 'node:inspector/promises';
import { ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
const { DetectorTracerProvider } = await import(${JSON.stringify(fileURLToPath(new URL('../src/detector-tracer.ts', import.meta.url)))});
const PARENT = ${JSON.stringify(PARENT)};
const tracer = new DetectorTracerProvider(() => {}, resourceFromAttributes({})).getTracer('t');
const oneSpan = (tracer) => {
  const span = tracer.startRecordSpan('tools/call weather', { kind: SpanKind.CLIENT, attributes: { method: 'tools/call', id: '7' } }, PARENT, ROOT_CONTEXT);
  span.setAttribute('session', 's');
  span.end();
};
const spans = 20000;
for (let i = 0; i < spans; i++) oneSpan(tracer);
const session = new Session();
session.connect();
await session.post('HeapProfiler.startSampling', { samplingInterval: 64, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
for (let i = 0; i < spans; i++) oneSpan(tracer);
const { profile } = await session.post('HeapProfiler.stopSampling');
let bytes = 0;
const pending = [profile.head];
for (let node = pending.pop(); node; node = pending.pop()) { bytes += node.selfSize; pending.push(...node.children); }
console.log('bytes ' + bytes / spans);
`;
