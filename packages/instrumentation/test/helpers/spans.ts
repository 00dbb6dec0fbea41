import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

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
