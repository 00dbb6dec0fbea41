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
export function capturedFetch(options: InstrumentFetchOptions = {}): {
  capture: SpanCapture;
  fetch: InstrumentedFetch;
} {
  const capture = captureSpans();
  return { capture, fetch: instrumentFetch({ ...options, tracerProvider: capture.provider }) };
}

/** What `stats()` says once every request and stream has ended. */
export const IDLE: RecorderStats = {
  openRequests: 0,
  openResumes: 0,
  pendingHttp: 0,
  heldPolls: 0,
  heldPollsEvicted: 0,
};

/** `vi.waitFor` options for what arrives over real loopback HTTP: generous, as tests run on loaded machines. */
export const WAIT = { timeout: 15_000, interval: 20 };

/** The first finished span named `name`; throws until there is one (a `vi.waitFor` callback). */
export function firstSpan(capture: SpanCapture, name: string): ReadableSpan {
  const span = capture.spans(name)[0];
  if (span === undefined) throw new Error(`no ${name} span yet`);
  return span;
}

export const attr = (span: ReadableSpan, name: string): unknown => span.attributes[name];

/** A span time in milliseconds, for comparing times (HrTime arrays do not compare with < or >=). */
export const ms = (time: HrTime): number => time[0] * 1e3 + time[1] / 1e6;
