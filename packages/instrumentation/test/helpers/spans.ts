import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { HrTime } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { instrumentFetch } from '../../src/index.js';
import type { InstrumentFetchOptions, InstrumentedFetch, RecorderStats } from '../../src/index.js';

export interface SpanCapture {
  provider: BasicTracerProvider;
  exporter: InMemorySpanExporter;
  spans(name?: string): ReadableSpan[];
  reset(): void;
}

export function captureSpans(): SpanCapture {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return {
    provider,
    exporter,
    spans: (name) => exporter.getFinishedSpans().filter((s) => name === undefined || s.name === name),
    reset: () => exporter.reset(),
  };
}

/** A span capture and an instrumentFetch whose spans go to it. */
export function capturedFetch(options: InstrumentFetchOptions = {}): { capture: SpanCapture; fetch: InstrumentedFetch } {
  const capture = captureSpans();
  return { capture, fetch: instrumentFetch({ ...options, tracerProvider: capture.provider }) };
}

/** What `stats()` says once every request and stream has ended. */
export const IDLE: RecorderStats = { openRequests: 0, openResumes: 0, pendingHttp: 0, heldPolls: 0, heldPollsEvicted: 0 };

/** Polls until `check` returns a truthy value; bounded, generous for a loaded machine. */
export async function waitFor<T>(check: () => T | undefined | false, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const attr = (span: ReadableSpan, name: string): unknown => span.attributes[name];

/** A span time in milliseconds, for comparing times (HrTime arrays do not compare with < or >=). */
export const ms = (time: HrTime): number => time[0] * 1e3 + time[1] / 1e6;
