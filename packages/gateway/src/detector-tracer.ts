import {
  INVALID_SPAN_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  context as otelContext,
  trace,
} from '@opentelemetry/api';
import type {
  Attributes,
  AttributeValue,
  Context,
  Exception,
  HrTime,
  Link,
  Span,
  SpanContext,
  SpanOptions,
  SpanStatus,
  TimeInput,
  Tracer,
  TracerProvider,
} from '@opentelemetry/api';
import {
  addHrTimes,
  hrTime,
  hrTimeDuration,
  isAttributeValue,
  isTimeInputHrTime,
  isTracingSuppressed,
  millisToHrTime,
  otperformance,
  sanitizeAttributes,
} from '@opentelemetry/core';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import { RandomIdGenerator } from '@opentelemetry/sdk-trace-base';
import type { IdGenerator, ReadableSpan, SpanProcessor, TimedEvent } from '@opentelemetry/sdk-trace-base';
import { UNKNOWN_SERVICE, primitiveAttributes, spanRecordOf } from '@resumewatch/detector';
import type { SpanRecord } from '@resumewatch/detector';
import { ATTR_SERVICE_NAME } from '@resumewatch/semconv';

/** Where a span's record goes at its end: the built-in detector's record feed (EmbeddedDetector.ingest). */
export type SpanRecordSink = (record: SpanRecord) => void;

/**
 * The SDK's span limits with no OTEL_*_LIMIT variable set: the only limits under which the gateway
 * takes this path (`detectorOnly` in tracing.ts), so that a span holds what the SDK's would.
 */
const ATTRIBUTE_COUNT_LIMIT = 128;
const LINK_COUNT_LIMIT = 128;
const EVENT_COUNT_LIMIT = 128;

/**
 * The gateway's spans when nothing but its built-in detector reads them: no OpenTelemetry SDK span,
 * no span processor chain, no exporter queue. Given the detector's record feed (a SpanRecordSink), each
 * span makes at its end the record the detector's SpanProcessor door would make of it (`toSpanRecord`:
 * the same fields, the same times, the attributes of a primitive value in their order) and hands it to
 * the feed: no span object is read after its end. Given a SpanProcessor, each span is a `ReadableSpan`
 * of its own handed to it at its end (the door's `toSpanRecord`). What the door reads (name, kind, ids,
 * parent, times, attributes, service.name) is made exactly as the SDK's BasicTracerProvider makes it
 * with its defaults: parent-based always-on sampling, tracing suppression, 128 attributes at most,
 * values kept whole, times from the same clocks with the same conversions. What it does not read
 * (status, events, links) is kept, unlimited attributes of links and events left out.
 */
export class DetectorTracerProvider implements TracerProvider {
  private readonly tracers = new Map<string, DetectorTracer>();

  private readonly processor: SpanProcessor | undefined;
  private readonly sink: SpanRecordSink | undefined;

  constructor(
    target: SpanProcessor | SpanRecordSink,
    private readonly resource: Resource,
    private readonly idGenerator: IdGenerator = new RandomIdGenerator(),
  ) {
    if (typeof target === 'function') this.sink = target;
    else this.processor = target;
  }

  getTracer(name: string, version?: string, options?: { schemaUrl?: string }): Tracer {
    const key = `${name}@${version ?? ''}:${options?.schemaUrl ?? ''}`;
    let tracer = this.tracers.get(key);
    if (!tracer) {
      tracer = new DetectorTracer(
        { name, version, schemaUrl: options?.schemaUrl },
        this.processor,
        this.sink,
        this.resource,
        this.idGenerator,
      );
      this.tracers.set(key, tracer);
    }
    return tracer;
  }

  forceFlush(): Promise<void> {
    // A record goes into the feed as its span ends: nothing waits.
    return this.processor?.forceFlush() ?? Promise.resolve();
  }

  shutdown(): Promise<void> {
    return this.processor?.shutdown() ?? Promise.resolve();
  }
}

class DetectorTracer implements Tracer {
  /** The records' service: the resource's service.name, as `toSpanRecord` reads it. */
  readonly service: string;

  constructor(
    readonly scope: InstrumentationScope,
    readonly processor: SpanProcessor | undefined,
    readonly sink: SpanRecordSink | undefined,
    readonly resource: Resource,
    private readonly ids: IdGenerator,
  ) {
    const service = resource.attributes[ATTR_SERVICE_NAME];
    this.service = typeof service === 'string' ? service : UNKNOWN_SERVICE;
  }

  startSpan(name: string, options: SpanOptions = {}, context: Context = otelContext.active()): Span {
    if (options.root) context = trace.deleteSpan(context);
    if (isTracingSuppressed(context)) return trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
    const parent = trace.getSpan(context)?.spanContext();
    const spanId = this.ids.generateSpanId();
    const valid = parent !== undefined && trace.isSpanContextValid(parent);
    const traceId = valid ? parent.traceId : this.ids.generateTraceId();
    // Parent-based, always on: a root or a sampled parent's child is recorded, an unsampled parent's is not.
    const sampled = !valid || (parent.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED;
    const spanContext: SpanContext = {
      traceId,
      spanId,
      traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
      traceState: valid ? parent.traceState : undefined,
    };
    if (!sampled) return trace.wrapSpanContext(spanContext);
    return new DetectorSpan(
      this,
      spanContext,
      name,
      options.kind ?? SpanKind.INTERNAL,
      valid ? parent : undefined,
      options.attributes,
      options.links,
      options.startTime,
    );
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, ...rest: unknown[]): ReturnType<F> {
    const fn = rest.at(-1) as (span: Span) => ReturnType<F>;
    const options = (rest.length > 1 ? rest[0] : undefined) as SpanOptions | undefined;
    const parent = (rest.length > 2 ? rest[1] : undefined) as Context | undefined;
    const context = parent ?? otelContext.active();
    const span = this.startSpan(name, options, context);
    return otelContext.with(trace.setSpan(context, span), fn, undefined, span);
  }
}

class DetectorSpan implements Span, ReadableSpan {
  readonly attributes: Attributes = {};
  readonly links: Link[] = [];
  readonly events: TimedEvent[] = [];
  readonly startTime: HrTime;
  endTime: HrTime = [0, 0];
  status: SpanStatus = { code: SpanStatusCode.UNSET };
  duration: HrTime = [-1, -1];
  ended = false;
  droppedAttributesCount = 0;
  droppedEventsCount = 0;
  droppedLinksCount = 0;
  private attributeCount = 0;
  /** An attribute holds (or held) an array: the record copies the primitive ones. */
  private arrays = false;
  private readonly performanceStartTime: number;
  private readonly performanceOffset: number;
  private readonly startTimeProvided: boolean;

  constructor(
    private readonly tracer: DetectorTracer,
    private readonly context: SpanContext,
    public name: string,
    readonly kind: SpanKind,
    readonly parentSpanContext: SpanContext | undefined,
    attributes: Attributes | undefined,
    links: Link[] | undefined,
    startTime: TimeInput | undefined,
  ) {
    const now = Date.now();
    this.performanceStartTime = otperformance.now();
    this.performanceOffset = now - (this.performanceStartTime + otperformance.timeOrigin);
    this.startTimeProvided = startTime != null;
    if (links) for (const link of links) this.addLink(link);
    this.startTime = this.time(startTime ?? now);
    // The SDK's `sanitizeAttributes` and then its setAttributes, in one pass: what either drops is
    // dropped (a bad key, a bad value, a null), and an array is copied.
    for (const key in attributes) {
      if (!Object.prototype.hasOwnProperty.call(attributes, key)) continue;
      const value = attributes[key];
      this.setAttribute(key, Array.isArray(value) && isAttributeValue(value) ? value.slice() : value);
    }
  }

  get resource(): Resource {
    return this.tracer.resource;
  }

  get instrumentationScope(): InstrumentationScope {
    return this.tracer.scope;
  }

  spanContext(): SpanContext {
    return this.context;
  }

  setAttribute(key: string, value: AttributeValue | undefined): this {
    if (value == null || this.ended || key.length === 0 || !isAttributeValue(value)) return this;
    const added = !Object.prototype.hasOwnProperty.call(this.attributes, key);
    if (added && this.attributeCount >= ATTRIBUTE_COUNT_LIMIT) {
      this.droppedAttributesCount++;
      return this;
    }
    this.attributes[key] = value;
    if (typeof value === 'object') this.arrays = true;
    if (added) this.attributeCount++;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    for (const key in attributes)
      if (Object.prototype.hasOwnProperty.call(attributes, key)) this.setAttribute(key, attributes[key]);
    return this;
  }

  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (this.ended) return this;
    if (this.events.length >= EVENT_COUNT_LIMIT) {
      this.events.shift();
      this.droppedEventsCount++;
    }
    let attributes: Attributes | undefined;
    if (isTimeInput(attributesOrTime)) time ??= attributesOrTime;
    else attributes = attributesOrTime;
    this.events.push({ name, attributes: sanitizeAttributes(attributes), time: this.time(time) });
    return this;
  }

  addLink(link: Link): this {
    if (this.ended) return this;
    if (this.links.length >= LINK_COUNT_LIMIT) {
      this.links.shift();
      this.droppedLinksCount++;
    }
    const attributes = sanitizeAttributes(link.attributes);
    this.links.push(
      Object.keys(attributes).length > 0 ? { context: link.context, attributes } : { context: link.context },
    );
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (this.ended || status.code === SpanStatusCode.UNSET || this.status.code === SpanStatusCode.OK) return this;
    this.status =
      status.code === SpanStatusCode.ERROR && typeof status.message === 'string'
        ? { code: status.code, message: status.message }
        : { code: status.code };
    return this;
  }

  updateName(name: string): this {
    if (!this.ended) this.name = name;
    return this;
  }

  end(endTime?: TimeInput): void {
    if (this.ended) return;
    this.endTime = this.time(endTime);
    this.duration = hrTimeDuration(this.startTime, this.endTime);
    if (this.duration[0] < 0) {
      this.endTime = [this.startTime[0], this.startTime[1]];
      this.duration = [0, 0];
    }
    this.ended = true;
    if (this.tracer.sink) this.tracer.sink(this.record());
    else this.tracer.processor!.onEnd(this);
  }

  /**
   * The record `toSpanRecord` makes of this span (spanRecordOf: one owner of the mapping), with the
   * span's own attribute object when all its values are primitive (most often: nothing changes it
   * after its end), and the tracer's service read once.
   */
  private record(): SpanRecord {
    const attributes = this.arrays
      ? primitiveAttributes(this.attributes)
      : (this.attributes as Record<string, string | number | boolean>);
    return spanRecordOf(this, attributes, this.tracer.service);
  }

  isRecording(): boolean {
    return !this.ended;
  }

  recordException(exception: Exception, time?: TimeInput): void {
    const attributes: Attributes = {};
    if (typeof exception === 'string') attributes['exception.message'] = exception;
    else if (exception) {
      const { code, name } = exception as { code?: string | number; name?: string };
      if (code) attributes['exception.type'] = code.toString();
      else if (name) attributes['exception.type'] = name;
      if (exception.message) attributes['exception.message'] = exception.message;
      if (exception.stack) attributes['exception.stacktrace'] = exception.stack;
    }
    if (attributes['exception.type'] || attributes['exception.message']) this.addEvent('exception', attributes, time);
  }

  /** The SDK span's `_getTime`: a time given (performance or epoch milliseconds, Date, HrTime), or now. */
  private time(input: TimeInput | undefined): HrTime {
    if (typeof input === 'number')
      return input <= otperformance.now() ? hrTime(input + this.performanceOffset) : millisToHrTime(input);
    if (input instanceof Date) return millisToHrTime(input.getTime());
    if (isTimeInputHrTime(input)) return input;
    if (this.startTimeProvided) return millisToHrTime(Date.now());
    return addHrTimes(this.startTime, millisToHrTime(otperformance.now() - this.performanceStartTime));
  }
}

function isTimeInput(value: unknown): value is TimeInput {
  return typeof value === 'number' || value instanceof Date || isTimeInputHrTime(value);
}
