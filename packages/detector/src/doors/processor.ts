import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@resumewatch/semconv';
import { Detector } from '../core/detector.js';
import type { DetectorInit } from '../core/options.js';
import { UNKNOWN_SERVICE } from '../core/services.js';
import type { AttributeValue, Finding, SpanKindCode, SpanRecord } from '../core/types.js';
import { DEFAULT_MAX_ID_BYTES, IdBounder, boundSpanStrings } from './bounded-ids.js';

export interface ResumewatchSpanProcessorOptions extends Omit<DetectorInit, 'onFinding'> {
  onFinding: (finding: Finding) => void;
  /** How often the clock is applied (storm windows, retention). Default 1000 ms; 0 for never (call tick()). */
  tickMs?: number;
  /** Longest session id, request id or service name kept, in UTF-8 bytes; longer ones are cut and hashed. Default 256. */
  maxIdBytes?: number;
}

/** Runs the detector in-process over the spans of one service's tracer provider. */
export class ResumewatchSpanProcessor implements SpanProcessor {
  readonly detector: Detector;
  private readonly ids: IdBounder;
  private readonly timer: ReturnType<typeof setInterval> | undefined;

  constructor(options: ResumewatchSpanProcessorOptions) {
    this.detector = new Detector(options);
    this.ids = new IdBounder(options.maxIdBytes ?? DEFAULT_MAX_ID_BYTES);
    const tickMs = options.tickMs ?? 1000;
    if (tickMs > 0) {
      this.timer = setInterval(() => this.detector.tick(), tickMs);
      this.timer.unref();
    }
  }

  onStart(_span: Span, _parentContext: Context): void {}

  onEnd(span: ReadableSpan): void {
    const record = toSpanRecord(span);
    boundSpanStrings(record, this.ids);
    this.detector.ingest(record);
  }

  tick(): void {
    this.detector.tick();
  }

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.detector.flush();
    return Promise.resolve();
  }
}

/** The record of an ended span: what the detector reads of it (one owner of this mapping). */
export function toSpanRecord(span: ReadableSpan): SpanRecord {
  const service = span.resource.attributes[ATTR_SERVICE_NAME];
  return spanRecordOf(
    span,
    primitiveAttributes(span.attributes),
    typeof service === 'string' ? service : UNKNOWN_SERVICE,
  );
}

/** A span's attributes of a primitive value: a record keeps no arrays. */
export function primitiveAttributes(from: ReadableSpan['attributes']): Record<string, AttributeValue> {
  const attributes: Record<string, AttributeValue> = {};
  for (const key in from) {
    const v = from[key];
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') attributes[key] = v;
  }
  return attributes;
}

/**
 * The record of an ended span whose attributes (of a primitive value) and service the caller already
 * has: the detector-only tracer of the gateway hands its span's own attribute object, uncopied.
 */
export function spanRecordOf(
  span: ReadableSpan,
  attributes: Record<string, AttributeValue>,
  service: string,
): SpanRecord {
  const ctx = span.spanContext();
  return {
    traceId: ctx.traceId,
    spanId: ctx.spanId,
    parentSpanId: span.parentSpanContext?.spanId,
    name: span.name,
    // @opentelemetry/api numbers kinds from INTERNAL = 0; OTLP from UNSPECIFIED = 0.
    kind: (span.kind + 1) as SpanKindCode,
    startTimeUnixMs: span.startTime[0] * 1000 + span.startTime[1] / 1e6,
    endTimeUnixMs: span.endTime[0] * 1000 + span.endTime[1] / 1e6,
    attributes,
    service,
  };
}
