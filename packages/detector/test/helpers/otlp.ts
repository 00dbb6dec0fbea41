import { BatchSpanProcessor, BasicTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME, TRACER_SCOPE } from '@resumewatch/semconv';
import type { SpanRecord } from '../../src/index.js';

/**
 * A span's attributes as OTLP KeyValues. `intValue` spells an integer as the encoding wants it: a string
 * in OTLP/JSON (int64), a number for protobufjs.
 */
export function otlpAttributes(
  attributes: SpanRecord['attributes'],
  intValue: (n: number) => string | number,
): { key: string; value: Record<string, unknown> }[] {
  return Object.entries(attributes).map(([key, v]) => ({
    key,
    value:
      typeof v === 'string'
        ? { stringValue: v }
        : typeof v === 'boolean'
          ? { boolValue: v }
          : Number.isInteger(v)
            ? { intValue: intValue(v as number) }
            : { doubleValue: v },
  }));
}

/** One OTLP/JSON ExportTraceServiceRequest holding the given spans under one service. */
export function otlpJson(spans: SpanRecord[], service = 'client'): Record<string, unknown> {
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: ATTR_SERVICE_NAME, value: { stringValue: service } }] },
        scopeSpans: [
          {
            scope: { name: TRACER_SCOPE },
            spans: spans.map((s) => ({
              traceId: s.traceId,
              spanId: s.spanId,
              name: s.name,
              kind: s.kind,
              startTimeUnixNano: String(Math.round(s.startTimeUnixMs * 1e6)),
              endTimeUnixNano: String(Math.round(s.endTimeUnixMs * 1e6)),
              attributes: otlpAttributes(s.attributes, String),
            })),
          },
        ],
      },
    ],
  };
}

/** A real SDK tracer provider exporting through `exporter` in batches. */
export function providerWith(exporter: SpanExporter, service: string): BasicTracerProvider {
  return new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: service }),
    spanProcessors: [new BatchSpanProcessor(exporter, { maxExportBatchSize: 512, scheduledDelayMillis: 50 })],
  });
}

/** Records the spans through the SDK, as the instrumentation would, with their own times and attributes. */
export function emit(provider: BasicTracerProvider, spans: SpanRecord[]): void {
  const tracer = provider.getTracer(TRACER_SCOPE);
  for (const s of spans) {
    tracer
      .startSpan(s.name, {
        kind: s.kind - 1,
        attributes: s.attributes as Record<string, string>,
        startTime: new Date(s.startTimeUnixMs),
      })
      .end(new Date(s.endTimeUnixMs));
  }
}
