import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/** Forwards to the real exporter and keeps what it exported (a scenario's few hundred spans, at most 10,000). */
export class KeepingExporter implements SpanExporter {
  readonly spans: ReadableSpan[] = [];
  constructor(private readonly inner: SpanExporter) {}
  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    if (this.spans.length < 10_000) this.spans.push(...spans);
    this.inner.export(spans, done);
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}
