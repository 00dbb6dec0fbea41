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
import type { IdGenerator, ReadableSpan, SpanProcessor, TimedEvent } from '@opentelemetry/sdk-trace-base';
import { UNKNOWN_SERVICE, primitiveAttributes, spanRecordOf } from '@resumewatch/detector';
import type { SpanRecord } from '@resumewatch/detector';
import type { RecordTracer } from '@resumewatch/instrumentation';
import { ATTR_SERVICE_NAME } from '@resumewatch/semconv';
import { PooledIdGenerator } from './pooled-ids.js';

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
    private readonly idGenerator: IdGenerator = new PooledIdGenerator(),
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

class DetectorTracer implements RecordTracer {
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
    return this.start(name, options, context, false);
  }

  /**
   * The span recorder's door (record-tracer.ts): `startSpan` under `parent`'s span context within
   * `active`, with no Context made for it, and the recorder's attribute object kept as the span's own
   * when every value in it is one the SDK keeps as it is (no copy key by key).
   */
  startRecordSpan(name: string, options: SpanOptions, parent: SpanContext | undefined, active: Context): Span {
    if (parent === undefined || options.root) return this.start(name, options, active, true);
    if (isTracingSuppressed(active)) return trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
    return this.begin(name, options, parent, true);
  }

  private start(name: string, options: SpanOptions, context: Context, adopt: boolean): Span {
    if (options.root) context = trace.deleteSpan(context);
    if (isTracingSuppressed(context)) return trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
    return this.begin(name, options, trace.getSpan(context)?.spanContext(), adopt);
  }

  private begin(name: string, options: SpanOptions, parent: SpanContext | undefined, adopt: boolean): Span {
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
    const kind = options.kind ?? SpanKind.INTERNAL;
    const parentContext = valid ? parent : undefined;
    // Fed to the detector, a span keeps no status, events or links: its record carries none.
    if (this.sink)
      return new RecordSpan(this, spanContext, name, kind, parentContext, options.attributes, options.startTime, adopt);
    return new DetectorSpan(
      this,
      spanContext,
      name,
      kind,
      parentContext,
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

/** @opentelemetry/core's time.ts constants: Math.pow(10, 6) and Math.pow(10, 9), both exact. */
const MILLISECONDS_TO_NANOSECONDS = 1e6;
const SECOND_TO_NANOSECONDS = 1e9;

const NOT_ENDED: HrTime = Object.freeze([0, 0]) as unknown as HrTime;

/**
 * A span whose end makes its record: what the detector reads of it (name, kind, ids, parent, times,
 * attributes), made as the SDK's span makes it. Status, events and links are not kept: no record
 * carries them (DetectorSpan keeps them for a span processor).
 */
class RecordSpan implements Span {
  attributes: Attributes;
  readonly startTime: HrTime;
  /** Until its end, one time for every span: an open span (a stream's request, for hours) holds no array of its own. */
  endTime: HrTime = NOT_ENDED;
  ended = false;
  droppedAttributesCount = 0;
  private attributeCount = 0;
  /** An attribute holds (or held) an array: the record copies the primitive ones. */
  private arrays = false;
  private readonly performanceStartTime: number;
  /**
   * Date.now() at the start (a small integer: no boxed number), from which `time` works out the SDK's
   * performance offset when a time is given as a performance reading (rare), rather than reading
   * `performance.timeOrigin` (a new heap number each read) and keeping a double for every span.
   */
  private readonly startNow: number;
  private readonly startTimeProvided: boolean;

  constructor(
    protected readonly tracer: DetectorTracer,
    private readonly context: SpanContext,
    public name: string,
    readonly kind: SpanKind,
    readonly parentSpanContext: SpanContext | undefined,
    attributes: Attributes | undefined,
    startTime: TimeInput | undefined,
    /** `attributes` is the caller's to give away (startRecordSpan): kept as it is when the SDK would keep each value. */
    adopt = false,
  ) {
    const now = Date.now();
    this.performanceStartTime = otperformance.now();
    this.startNow = now;
    this.startTimeProvided = startTime != null;
    this.startTime = this.time(startTime ?? now);
    const kept = adopt && attributes !== undefined ? keptAsGiven(attributes) : -1;
    if (kept >= 0) {
      this.attributes = attributes!;
      this.attributeCount = kept;
      return;
    }
    this.attributes = {};
    // The SDK's `sanitizeAttributes` and then its setAttributes, in one pass: what either drops is
    // dropped (a bad key, a bad value, a null), and an array is copied.
    for (const key in attributes) {
      if (!Object.prototype.hasOwnProperty.call(attributes, key)) continue;
      const value = attributes[key];
      this.setAttribute(key, Array.isArray(value) && isAttributeValue(value) ? value.slice() : value);
    }
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

  addEvent(_name: string, _attributesOrTime?: Attributes | TimeInput, _time?: TimeInput): this {
    return this;
  }

  addLink(_link: Link): this {
    return this;
  }

  addLinks(_links: Link[]): this {
    return this;
  }

  setStatus(_status: SpanStatus): this {
    return this;
  }

  recordException(_exception: Exception, _time?: TimeInput): void {}

  updateName(name: string): this {
    if (!this.ended) this.name = name;
    return this;
  }

  end(endTime?: TimeInput): void {
    if (this.ended) return;
    this.endTime = this.time(endTime);
    // An end before the start is the start (the SDK's span: a negative duration is none). By index: a
    // destructuring `[s, n]` makes an iterator and its results wherever V8 runs this unoptimized.
    const s = this.startTime[0];
    const n = this.startTime[1];
    if (this.endTime[0] < s || (this.endTime[0] === s && this.endTime[1] < n)) this.endTime = [s, n];
    this.ended = true;
    this.ending();
  }

  /** At its end: the record into the detector's feed. */
  protected ending(): void {
    this.tracer.sink!(this.record());
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
    return spanRecordOf(this as unknown as ReadableSpan, attributes, this.tracer.service);
  }

  isRecording(): boolean {
    return !this.ended;
  }

  /** The SDK span's `_getTime`: a time given (performance or epoch milliseconds, Date, HrTime), or now. */
  protected time(input: TimeInput | undefined): HrTime {
    if (typeof input === 'number')
      return input <= otperformance.now()
        ? hrTime(input + (this.startNow - (this.performanceStartTime + otperformance.timeOrigin)))
        : millisToHrTime(input);
    if (input instanceof Date) return millisToHrTime(input.getTime());
    if (isTimeInputHrTime(input)) return input;
    if (this.startTimeProvided) return millisToHrTime(Date.now());
    return sinceStart(this.startTime, otperformance.now() - this.performanceStartTime);
  }
}

/**
 * `addHrTimes(start, millisToHrTime(elapsed))` of @opentelemetry/core (the SDK span's end time), the same
 * arithmetic in one array instead of two.
 */
function sinceStart(start: HrTime, elapsed: number): HrTime {
  let seconds = start[0] + Math.trunc(elapsed / 1000);
  let nanos = start[1] + Math.round((elapsed % 1000) * MILLISECONDS_TO_NANOSECONDS);
  if (nanos >= SECOND_TO_NANOSECONDS) {
    nanos -= SECOND_TO_NANOSECONDS;
    seconds += 1;
  }
  return [seconds, nanos];
}

/**
 * How many attributes `attributes` holds when the SDK would keep every one as it is (a key, a string,
 * number or boolean value, no more than its limit), so the object can be the span's own; else -1.
 */
function keptAsGiven(attributes: Attributes): number {
  let count = 0;
  for (const key in attributes) {
    if (!Object.prototype.hasOwnProperty.call(attributes, key)) return -1;
    const value = attributes[key];
    if (key.length === 0 || (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean'))
      return -1;
    count++;
  }
  return count <= ATTRIBUTE_COUNT_LIMIT ? count : -1;
}

/** A span handed at its end to a span processor: a `ReadableSpan`, with its status, events and links. */
class DetectorSpan extends RecordSpan implements ReadableSpan {
  readonly links: Link[] = [];
  readonly events: TimedEvent[] = [];
  status: SpanStatus = { code: SpanStatusCode.UNSET };
  duration: HrTime = [-1, -1];
  droppedEventsCount = 0;
  droppedLinksCount = 0;

  constructor(
    tracer: DetectorTracer,
    context: SpanContext,
    name: string,
    kind: SpanKind,
    parentSpanContext: SpanContext | undefined,
    attributes: Attributes | undefined,
    links: Link[] | undefined,
    startTime: TimeInput | undefined,
  ) {
    super(tracer, context, name, kind, parentSpanContext, attributes, startTime);
    if (links) for (const link of links) this.addLink(link);
  }

  get resource(): Resource {
    return this.tracer.resource;
  }

  get instrumentationScope(): InstrumentationScope {
    return this.tracer.scope;
  }

  override addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
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

  override addLink(link: Link): this {
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

  override addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  override setStatus(status: SpanStatus): this {
    if (this.ended || status.code === SpanStatusCode.UNSET || this.status.code === SpanStatusCode.OK) return this;
    this.status =
      status.code === SpanStatusCode.ERROR && typeof status.message === 'string'
        ? { code: status.code, message: status.message }
        : { code: status.code };
    return this;
  }

  override recordException(exception: Exception, time?: TimeInput): void {
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

  protected override ending(): void {
    this.duration = hrTimeDuration(this.startTime, this.endTime);
    this.tracer.processor!.onEnd(this);
  }
}

function isTimeInput(value: unknown): value is TimeInput {
  return typeof value === 'number' || value instanceof Date || isTimeInputHrTime(value);
}
