// Spans shaped like the instrumentation's, produced with the real OpenTelemetry SDK and OTLP/HTTP
// exporter, for the end-to-end test of alerts and dashboards against a real detector and Prometheus.
// Each scenario is one service.name; every wave opens new sessions.
import { type Attributes, SpanKind, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_REATTACH_TRIGGER,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_LAST_EVENT_ID,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_RESUMED_FROM_ID,
  ATTR_MCP_TERMINAL_DELIVERY,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_OUTCOME,
  ATTR_SERVICE_NAME,
  ReattachTrigger,
  ResumeOutcome,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_STREAM_RESUME,
  TRACER_SCOPE,
  TerminalDelivery,
  TerminalOutcome,
  mcpRequestSpanName,
} from '@resumewatch/semconv';

export const Scenario = {
  /** The seed: the result replayed on each reconnect after a clean close, until the cursor is evicted. */
  SEED_LOOP: 'e2e-seed-loop',
  /** Server restarted and lost its buffer: 200 and no event on an unfinished request. */
  SERVER_RESTART: 'e2e-server-restart',
  /** Cursor evicted while the request was still running: 409. */
  CURSOR_EVICTED: 'e2e-cursor-evicted',
  /** Requests that complete once, no resume. */
  HEALTHY: 'e2e-healthy',
} as const;

const METHOD = 'tools/call';
const TOOL = 'slow_report';

export class Traffic {
  private readonly providers = new Map<string, BasicTracerProvider>();
  private wave = 0;

  /** endpoints: OTLP/HTTP trace URLs (…/v1/traces); every span goes to each of them. */
  constructor(private readonly endpoints: string[]) {
    for (const service of Object.values(Scenario)) {
      this.providers.set(
        service,
        new BasicTracerProvider({
          resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: service }),
          spanProcessors: endpoints.map(
            (url) => new BatchSpanProcessor(new OTLPTraceExporter({ url }), { scheduledDelayMillis: 200, maxExportBatchSize: 512 }),
          ),
        }),
      );
    }
  }

  private tracer(service: string): Tracer {
    return this.providers.get(service)!.getTracer(TRACER_SCOPE);
  }

  /** One wave: `sessions` new sessions of every scenario. */
  emitWave(sessions = 2): void {
    const w = ++this.wave;
    for (let i = 0; i < sessions; i++) {
      this.seedLoop(`${w}-${i}`);
      this.serverRestart(`${w}-${i}`);
      this.cursorEvicted(`${w}-${i}`);
      this.healthy(`${w}-${i}`);
    }
  }

  async flush(): Promise<void> {
    await Promise.all([...this.providers.values()].map((p) => p.forceFlush()));
  }

  async shutdown(): Promise<void> {
    await Promise.allSettled([...this.providers.values()].map((p) => p.shutdown()));
  }

  private span(service: string, name: string, kind: SpanKind, attributes: Attributes): void {
    this.tracer(service).startSpan(name, { kind, attributes, root: true }).end();
  }

  private request(service: string, session: string): Attributes {
    const base = { [ATTR_MCP_SESSION_ID]: session, [ATTR_JSONRPC_REQUEST_ID]: 1 };
    this.span(service, mcpRequestSpanName(METHOD, TOOL), SpanKind.CLIENT, { ...base, [ATTR_MCP_METHOD_NAME]: METHOD });
    return base;
  }

  private terminal(service: string, base: Attributes, stream: string, duplicate: boolean): void {
    this.span(service, SPAN_REQUEST_TERMINAL, SpanKind.INTERNAL, {
      ...base,
      [ATTR_MCP_STREAM_ID]: stream,
      [ATTR_MCP_TERMINAL_OUTCOME]: TerminalOutcome.RESULT,
      [ATTR_MCP_TERMINAL_DUPLICATE]: duplicate,
      [ATTR_MCP_TERMINAL_DELIVERY]: duplicate ? TerminalDelivery.REPLAY : TerminalDelivery.LIVE,
    });
  }

  private resume(service: string, base: Attributes, stream: string, from: string, attrs: Attributes): void {
    this.span(service, SPAN_STREAM_RESUME, SpanKind.CLIENT, {
      ...base,
      [ATTR_MCP_STREAM_ID]: stream,
      [ATTR_MCP_STREAM_RESUMED_FROM_ID]: from,
      [ATTR_MCP_RESUME_LAST_EVENT_ID]: `${from}-e9`,
      ...attrs,
    });
  }

  private seedLoop(id: string): void {
    const service = Scenario.SEED_LOOP;
    const base = this.request(service, `seed-${id}`);
    this.terminal(service, base, `seed-${id}-s0`, false);
    let previous = `seed-${id}-s0`;
    for (let k = 1; k <= 4; k++) {
      const stream = `seed-${id}-s${k}`;
      this.span(service, SPAN_SESSION_REATTACH, SpanKind.CLIENT, {
        ...base,
        [ATTR_MCP_STREAM_ID]: stream,
        [ATTR_MCP_REATTACH_TRIGGER]: ReattachTrigger.STREAM_CLOSED,
        [ATTR_MCP_REATTACH_ACCEPTED]: true,
        [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
      });
      this.resume(service, base, stream, previous, {
        [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: true,
        [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.CONTINUATION,
        [ATTR_MCP_RESUME_REPLAYED_EVENTS]: 1,
        [ATTR_MCP_RESUME_REPLAYED_TERMINAL]: true,
        [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
      });
      this.terminal(service, base, stream, true);
      previous = stream;
    }
    // the buffer finally evicted the cursor: 200 and nothing
    this.resume(service, base, `seed-${id}-s5`, previous, {
      [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: true,
      [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.EMPTY_REPLAY,
      [ATTR_MCP_RESUME_REPLAYED_EVENTS]: 0,
      [ATTR_MCP_RESUME_REPLAYED_TERMINAL]: false,
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
    });
  }

  private serverRestart(id: string): void {
    const service = Scenario.SERVER_RESTART;
    const base = this.request(service, `restart-${id}`);
    this.resume(service, base, `restart-${id}-s1`, `restart-${id}-s0`, {
      [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: false,
      [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.EMPTY_REPLAY,
      [ATTR_MCP_RESUME_REPLAYED_EVENTS]: 0,
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200,
    });
  }

  private cursorEvicted(id: string): void {
    const service = Scenario.CURSOR_EVICTED;
    const base = this.request(service, `evicted-${id}`);
    this.resume(service, base, `evicted-${id}-s1`, `evicted-${id}-s0`, {
      [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: false,
      [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.CURSOR_REJECTED,
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 409,
    });
  }

  private healthy(id: string): void {
    const service = Scenario.HEALTHY;
    const base = this.request(service, `healthy-${id}`);
    this.terminal(service, base, `healthy-${id}-s0`, false);
  }
}

/** An OTLP/JSON body whose spans the detector must count as invalid (ids of the wrong length). */
export function invalidSpansBody(n: number): string {
  const spans = Array.from({ length: n }, (_, i) => ({
    traceId: 'abc',
    spanId: `x${i}`,
    name: SPAN_REQUEST_TERMINAL,
    kind: 1,
    startTimeUnixNano: '1',
    endTimeUnixNano: '2',
  }));
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: ATTR_SERVICE_NAME, value: { stringValue: 'e2e-broken-exporter' } }] },
        scopeSpans: [{ scope: { name: TRACER_SCOPE }, spans }],
      },
    ],
  });
}
