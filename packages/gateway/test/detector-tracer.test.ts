import type {
  Attributes,
  AttributeValue,
  Context,
  Exception,
  Link,
  Span,
  SpanContext,
  SpanOptions,
  SpanStatus,
  TimeInput,
  Tracer,
  TracerProvider,
} from '@opentelemetry/api';
import { trace } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, RandomIdGenerator } from '@opentelemetry/sdk-trace-base';
import type { IdGenerator, ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { startEmbeddedDetector, type EmbeddedDetector } from '@resumewatch/daemon';
import { toSpanRecord, type Finding, type SpanRecord } from '@resumewatch/detector';
import { instrumentFetch, type RecordTracer } from '@resumewatch/instrumentation';
import { LAB_SERVER_SCENARIO_NAMES, runScenario, startLabServer } from '@resumewatch/lab';
import type { LabServerScenarioName } from '@resumewatch/lab';
import { ATTR_MCP_SESSION_ID, ATTR_SERVICE_NAME } from '@resumewatch/semconv';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DetectorTracerProvider } from '../src/detector-tracer.js';
import { gatewayTracing } from '../src/tracing.js';

// The detector-only tracer (the gateway's spans when its built-in detector is their only reader) against
// the SDK's BasicTracerProvider, on the span recorder's real traffic: every lab scenario is run once
// with a tracer that makes each span on both, with the same ids and the same clock readings. Each
// span's record, as the detector's SpanProcessor door makes it (toSpanRecord), must be the same on both
// sides, span for span, and so must the findings of two detectors, one fed by each.

/** Hands out, to both tracers of a pair, the ids the pair's span is to have. */
class PairedIds implements IdGenerator {
  traceId = '';
  spanId = '';
  generateTraceId(): string {
    return this.traceId;
  }
  generateSpanId(): string {
    return this.spanId;
  }
}

/** Runs `fn` with Date.now and performance.now frozen, so that both tracers read the same times. */
function atOneInstant<T>(fn: () => T): T {
  const date = Date.now;
  const perf = performance.now;
  const d = date.call(Date);
  const p = perf.call(performance);
  Date.now = () => d;
  performance.now = () => p;
  try {
    return fn();
  } finally {
    Date.now = date;
    performance.now = perf;
  }
}

/**
 * What a pair found unequal. The span recorder catches what its tracer and spans throw (and the span is
 * then lost on both sides, or the call's answer taken from one side): each failed comparison is kept
 * here too, for the test to see, and thrown as before.
 */
const mismatches: unknown[] = [];

function same(what: string, compare: () => void): void {
  try {
    compare();
  } catch (error) {
    mismatches.push({ what, error: error instanceof Error ? error.message : String(error) });
    throw error;
  }
}

class PairedSpan implements Span {
  constructor(
    private readonly a: Span,
    private readonly b: Span,
  ) {}
  spanContext(): SpanContext {
    return this.a.spanContext();
  }
  setAttribute(key: string, value: AttributeValue): this {
    this.a.setAttribute(key, value);
    this.b.setAttribute(key, value);
    return this;
  }
  setAttributes(attributes: Attributes): this {
    this.a.setAttributes(attributes);
    this.b.setAttributes(attributes);
    return this;
  }
  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    atOneInstant(() => {
      this.a.addEvent(name, attributesOrTime, time);
      this.b.addEvent(name, attributesOrTime, time);
    });
    return this;
  }
  addLink(link: Link): this {
    this.a.addLink(link);
    this.b.addLink(link);
    return this;
  }
  addLinks(links: Link[]): this {
    this.a.addLinks(links);
    this.b.addLinks(links);
    return this;
  }
  setStatus(status: SpanStatus): this {
    this.a.setStatus(status);
    this.b.setStatus(status);
    return this;
  }
  updateName(name: string): this {
    this.a.updateName(name);
    this.b.updateName(name);
    return this;
  }
  end(endTime?: TimeInput): void {
    atOneInstant(() => {
      this.a.end(endTime);
      this.b.end(endTime);
    });
  }
  isRecording(): boolean {
    same('isRecording', () => expect(this.b.isRecording()).toBe(this.a.isRecording()));
    return this.a.isRecording();
  }
  recordException(exception: Exception, time?: TimeInput): void {
    atOneInstant(() => {
      this.a.recordException(exception, time);
      this.b.recordException(exception, time);
    });
  }
}

class PairedTracer implements Tracer {
  private readonly random = new RandomIdGenerator();
  constructor(
    private readonly ids: PairedIds,
    private readonly a: Tracer,
    private readonly b: Tracer,
  ) {}
  startSpan(name: string, options?: SpanOptions, context?: Context): Span {
    this.ids.traceId = this.random.generateTraceId();
    this.ids.spanId = this.random.generateSpanId();
    const [a, b] = atOneInstant(() => [
      this.a.startSpan(name, options, context),
      this.b.startSpan(name, options, context),
    ]);
    same(`spanContext of ${name}`, () => expect(b.spanContext()).toEqual(a.spanContext()));
    return new PairedSpan(a, b);
  }
  startActiveSpan(): never {
    throw new Error('the span recorder starts no active span');
  }
}

/**
 * The pair through the span recorder's record door: the detector-only tracer's `startRecordSpan` (the
 * parent as a span context, the recorder's attribute object kept as the span's) against the SDK's
 * `startSpan` with the Context the recorder would otherwise have made.
 */
const doorMismatches: unknown[] = [];

class PairedRecordTracer extends PairedTracer implements RecordTracer {
  constructor(
    private readonly pairedIds: PairedIds,
    private readonly light: RecordTracer,
    private readonly sdk: Tracer,
  ) {
    super(pairedIds, light, sdk);
  }
  startRecordSpan(name: string, options: SpanOptions, parent: SpanContext | undefined, active: Context): Span {
    this.pairedIds.traceId = new RandomIdGenerator().generateTraceId();
    this.pairedIds.spanId = new RandomIdGenerator().generateSpanId();
    const [a, b] = atOneInstant(() => [
      this.light.startRecordSpan(name, options, parent, active),
      this.sdk.startSpan(name, options, parent ? trace.setSpanContext(active, parent) : active),
    ]);
    // The recorder catches what its tracer throws (and the span is then lost on both sides): kept for the test to see.
    if (JSON.stringify(b.spanContext()) !== JSON.stringify(a.spanContext()))
      doorMismatches.push({ name, light: a.spanContext(), sdk: b.spanContext() });
    return new PairedSpan(a, b);
  }
}

/** Keeps the record of each span it is handed, and hands the span on to a detector. */
class Recording implements SpanProcessor {
  readonly records: SpanRecord[] = [];
  constructor(private readonly detector: EmbeddedDetector) {}
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    this.records.push(toSpanRecord(span));
    this.detector.processor.onEnd(span);
  }
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** The record feed's side: keeps a copy of each record it is fed (the pipeline bounds strings in place), then feeds it on. */
class RecordingFeed {
  readonly records: SpanRecord[] = [];
  constructor(private readonly detector: EmbeddedDetector) {}
  readonly feed = (record: SpanRecord): void => {
    this.records.push({ ...record, attributes: { ...record.attributes } });
    this.detector.ingest(record);
  };
}

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.allSettled(closers.splice(0).map((c) => c()));
});

const detectorOptions = { config: { metricsPort: 0 }, output: null } as const;

async function pairedRun(
  name: LabServerScenarioName,
  feed: 'processor' | 'records' | 'record-door' = 'processor',
): Promise<{
  records: [SpanRecord[], SpanRecord[]];
  findings: [Finding[], Finding[]];
}> {
  const requestTimeoutMs = name === 'server-restart' ? 2_000 : name === 'resume-loses-result' ? 3_000 : 10_000;
  const lab = await startLabServer({ retryIntervalMs: 50 });
  closers.push(() => lab.close());
  const detectors = [await startEmbeddedDetector(detectorOptions), await startEmbeddedDetector(detectorOptions)];
  for (const d of detectors) closers.push(() => d.close());
  const recordings = detectors.map((d) => new Recording(d)) as [Recording, Recording];
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'paired' });
  const ids = new PairedIds();
  const fed = new RecordingFeed(detectors[0]!);
  const light = new DetectorTracerProvider(feed === 'processor' ? recordings[0] : fed.feed, resource, ids);
  const sdk = new BasicTracerProvider({ resource, spanProcessors: [recordings[1]], idGenerator: ids });
  const paired: TracerProvider = {
    getTracer: (tracer, version) =>
      feed === 'record-door'
        ? new PairedRecordTracer(ids, light.getTracer(tracer, version) as RecordTracer, sdk.getTracer(tracer, version))
        : new PairedTracer(ids, light.getTracer(tracer, version), sdk.getTracer(tracer, version)),
  };
  const fetch = instrumentFetch({ tracerProvider: paired, requestTimeoutMs });
  await runScenario(name, {
    serverUrl: lab.url,
    controlUrl: lab.controlUrl,
    fetch,
    maxReconnects: name === 'endless-loop' ? 5 : 10,
  });
  // Past the request deadline where it is the evidence, then past the storm window.
  if (requestTimeoutMs < 10_000) await new Promise((r) => setTimeout(r, requestTimeoutMs + 200));
  const end = Date.now() + detectors[0]!.config.stormWindowMs + 1;
  for (const d of detectors) d.detector.advance(end);
  return {
    records: [feed === 'processor' ? recordings[0].records : fed.records, recordings[1].records],
    findings: [detectors[0]!.findings(), detectors[1]!.findings()],
  };
}

describe('the detector-only tracer makes the records and findings of the SDK', () => {
  it.each(LAB_SERVER_SCENARIO_NAMES)('%s', { timeout: 40_000 }, async (name) => {
    mismatches.length = 0;
    const { records, findings } = await pairedRun(name);
    expect(mismatches).toEqual([]);
    expect(records[0].length).toBeGreaterThan(0);
    expect(records[0]).toEqual(records[1]);
    expect(findings[0]).toEqual(findings[1]);
  });
});

describe("the detector-only tracer's records, fed to the detector, are the SDK's spans' records", () => {
  it.each(LAB_SERVER_SCENARIO_NAMES)('%s', { timeout: 40_000 }, async (name) => {
    mismatches.length = 0;
    const { records, findings } = await pairedRun(name, 'records');
    expect(mismatches).toEqual([]);
    expect(records[0].length).toBeGreaterThan(0);
    expect(records[0]).toEqual(records[1]);
    expect(findings[0]).toEqual(findings[1]);
  });

  it('copies the primitive attributes when an array was set, and drops what the SDK drops', async () => {
    const d = await startEmbeddedDetector(detectorOptions);
    closers.push(() => d.close());
    const fed = new RecordingFeed(d);
    const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'paired' });
    const ids = new PairedIds();
    const sdkRecords = new Recording(d);
    const light = new DetectorTracerProvider(fed.feed, resource, ids).getTracer('t');
    const sdk = new BasicTracerProvider({ resource, spanProcessors: [sdkRecords], idGenerator: ids }).getTracer('t');
    const tracer = new PairedTracer(ids, light, sdk);
    const list = ['a', 'b'];
    const attributes = { one: 'x', '': 'no key', list, none: null, bad: { object: true } } as unknown as Attributes;
    const span = tracer.startSpan('s', { attributes });
    list.push('changed after');
    span.setAttribute('two', 2);
    span.setAttribute('one', 'again');
    span.end();
    expect(fed.records).toEqual(sdkRecords.records);
    expect(fed.records[0]!.attributes).toEqual({ one: 'again', two: 2 });
  });
});

describe("the span recorder's record door (startRecordSpan) makes the SDK's spans' records", () => {
  it.each(LAB_SERVER_SCENARIO_NAMES)('%s', { timeout: 40_000 }, async (name) => {
    doorMismatches.length = 0;
    mismatches.length = 0;
    const { records, findings } = await pairedRun(name, 'record-door');
    expect(doorMismatches).toEqual([]);
    expect(mismatches).toEqual([]);
    expect(records[0].length).toBeGreaterThan(0);
    expect(records[0]).toEqual(records[1]);
    expect(findings[0]).toEqual(findings[1]);
  });
});

describe('the record door under an id policy', () => {
  it('is kept, and the records it makes carry the ids as the policy records them', async () => {
    const lab = await startLabServer({ retryIntervalMs: 50 });
    closers.push(() => lab.close());
    const d = await startEmbeddedDetector(detectorOptions);
    closers.push(() => d.close());
    const fed = new RecordingFeed(d);
    const light = new DetectorTracerProvider(fed.feed, resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'hmac' }));
    const doors: ReturnType<typeof vi.spyOn>[] = [];
    const provider: TracerProvider = {
      getTracer: (name, version) => {
        const tracer = light.getTracer(name, version) as RecordTracer;
        doors.push(vi.spyOn(tracer, 'startRecordSpan'));
        return tracer;
      },
    };
    const key = 'a key of the test, 32 bytes long';
    const fetch = instrumentFetch({ tracerProvider: provider, idPolicy: 'hmac', idKey: key });
    await runScenario('healthy', { serverUrl: lab.url, controlUrl: lab.controlUrl, fetch, maxReconnects: 10 });
    const sessions = fed.records.map((r) => r.attributes[ATTR_MCP_SESSION_ID]).filter((v) => v !== undefined);
    expect(fed.records.length).toBeGreaterThan(0);
    expect(doors.reduce((calls, door) => calls + door.mock.calls.length, 0)).toBe(fed.records.length);
    expect(sessions.length).toBeGreaterThan(0);
    for (const session of sessions) expect(session).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('gatewayTracing', () => {
  const detector = async () => {
    const d = await startEmbeddedDetector(detectorOptions);
    closers.push(() => d.close());
    return d;
  };

  it("the detector-only tracer when the built-in detector is the spans' only reader", async () => {
    const d = await detector();
    const { provider } = gatewayTracing({ detector: d, env: {} });
    expect(provider).toBeInstanceOf(DetectorTracerProvider);
    // Its tracer is the span recorder's record door (record-tracer.ts).
    expect(typeof (provider.getTracer('t') as Partial<RecordTracer>).startRecordSpan).toBe('function');
  });

  it("the SDK's when anything else reads them or the SDK's span variables are set", async () => {
    const d = await detector();
    const others = [
      gatewayTracing({ detector: d, env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' } }),
      gatewayTracing({ detector: d, env: {}, spanProcessors: [new Recording(d)] }),
      gatewayTracing({ detector: d, env: { OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT: '4' } }),
      gatewayTracing({ detector: d, env: { OTEL_TRACES_SAMPLER: 'always_off' } }),
      gatewayTracing({ detector: undefined, env: {} }),
    ];
    for (const t of others) {
      expect(t.provider).toBeInstanceOf(BasicTracerProvider);
      await t.shutdown();
    }
  });
});
