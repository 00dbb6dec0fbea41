import type { Context, Span, SpanContext, SpanOptions, Tracer } from '@opentelemetry/api';

/**
 * A tracer whose spans only become records (the gateway's, when its built-in detector is their only
 * reader): the span recorder starts each of its spans through `startRecordSpan`, with the parent it
 * holds given as a span context, so no Context object is made per span, and hands over the attribute
 * object it built (never read or changed by it afterwards), so it is not copied key by key. What the
 * span becomes must be what `startSpan(name, options, parent ? trace.setSpanContext(active, parent) :
 * active)` would make of it. Any other tracer gets exactly that call.
 */
export interface RecordTracer extends Tracer {
  startRecordSpan(name: string, options: SpanOptions, parent: SpanContext | undefined, active: Context): Span;
}

export function isRecordTracer(tracer: Tracer): tracer is RecordTracer {
  return typeof (tracer as Partial<RecordTracer>).startRecordSpan === 'function';
}
