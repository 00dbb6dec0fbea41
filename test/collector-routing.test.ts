// The Collector's routing to the detector replicas (deploy/collector/config.yaml), applied to real spans.
// No Collector runs here: the routing is read from the shipped file and applied as contrib 0.130.0's
// `routing` connector and `loadbalancing` exporter do (test/helpers/collector-routing.ts). A replica
// sees a failure only when it gets all the spans the failure needs, so each span's key must be the same
// for all of them, whichever span of a trace comes first in an export batch:
// - a seed-loop session (real MCP SDK client, instrumented): every span that names the session keys on it;
// - modern-broken-reissue (real v2 SDK client and server, each instrumented with its own tracer provider,
//   as two processes would be): every span of the first attempt's trace and of the re-issue's keys on
//   the tool's name, so the re-issue and the server's span saying the first attempt ran meet.
import { context, propagation } from '@opentelemetry/api';
import { BasicTracerProvider, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { registerGatewayTraceContext } from '@resumewatch/gateway';
import { instrumentFetch, instrumentMcpServer } from '@resumewatch/instrumentation';
import { runScenario, startLabServer } from '@resumewatch/lab';
import {
  ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION,
  ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID,
  ATTR_MCP_SESSION_ID,
} from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectorRouting } from './helpers/collector-routing.js';

const routing = collectorRouting();

/** Keeps the spans one tracer provider (one process) ended. */
function keeper(): { spans: ReadableSpan[]; processor: SpanProcessor } {
  const spans: ReadableSpan[] = [];
  return {
    spans,
    processor: {
      onStart: () => undefined,
      onEnd: (span) => void spans.push(span),
      forceFlush: () => Promise.resolve(),
      shutdown: () => Promise.resolve(),
    },
  };
}

const routeOf = (span: ReadableSpan) => routing.routeOf(span.attributes);

describe('deploy/collector/config.yaml routes the spans of one failure to one detector replica', () => {
  // The client's trace context goes to the server in `traceparent`: the server's spans join its traces.
  beforeAll(() => registerGatewayTraceContext());
  afterAll(() => {
    propagation.disable();
    context.disable();
  });

  it('a seed-loop session: every span that names the session goes by the session', { timeout: 30_000 }, async () => {
    const lab = await startLabServer({ retryIntervalMs: 50 });
    const client = keeper();
    const provider = new BasicTracerProvider({ spanProcessors: [client.processor] });
    try {
      const summary = await runScenario('seed-loop', {
        serverUrl: lab.url,
        controlUrl: lab.controlUrl,
        fetch: instrumentFetch({ tracerProvider: provider }),
      });
      await provider.forceFlush();
      expect(summary.terminalDeliveries, summary.finding).toBeGreaterThan(1);
    } finally {
      await provider.shutdown();
      await lab.close();
    }
    const session = client.spans.filter((s) => s.attributes[ATTR_MCP_SESSION_ID] !== undefined);
    // The request, its terminals, the resumes and the reattaches of the loop.
    expect(session.length).toBeGreaterThan(4);
    const routes = new Set(session.map((s) => JSON.stringify(routeOf(s))));
    expect([...routes]).toEqual([
      JSON.stringify({ pipeline: 'sessions', key: String(session[0]!.attributes[ATTR_MCP_SESSION_ID]) }),
    ]);
  });

  it(
    "modern-broken-reissue: both attempts' spans, client's and server's, go by the tool's name",
    { timeout: 30_000 },
    async () => {
      const client = keeper();
      const server = keeper();
      const clientProvider = new BasicTracerProvider({ spanProcessors: [client.processor] });
      const serverProvider = new BasicTracerProvider({ spanProcessors: [server.processor] });
      try {
        const summary = await runScenario('modern-broken-reissue', {
          // The scenario starts its own v2 server: this URL is never called.
          serverUrl: 'http://127.0.0.1:9/mcp',
          client: 'sdk-v2',
          fetch: instrumentFetch({ tracerProvider: clientProvider }),
          modernServer: { decorateServer: (s) => instrumentMcpServer(s, { tracerProvider: serverProvider }) },
        });
        expect(summary.sideEffectCount, summary.finding).toBe(2);
      } finally {
        await clientProvider.shutdown();
        await serverProvider.shutdown();
      }
      const all = [...client.spans, ...server.spans];
      const reissue = client.spans.find((s) => s.attributes[ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID] !== undefined)!;
      const firstTrace = String(reissue.attributes[ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID]);
      const fate = server.spans.find(
        (s) =>
          s.spanContext().traceId === firstTrace &&
          s.attributes[ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION] === true,
      );
      expect(fate, "the server's span of the first attempt says it ran on").toBeDefined();
      const traces = new Set([firstTrace, reissue.spanContext().traceId]);
      const attempts = all.filter((s) => traces.has(s.spanContext().traceId));
      // The client's request and terminal spans and the server's request spans, of both traces.
      expect(attempts.length).toBeGreaterThanOrEqual(5);
      const routes = attempts.map((s) => ({ span: s.name, ...routeOf(s) }));
      expect(routes).toEqual(routes.map((r) => ({ ...r, pipeline: 'stateless', key: 'charge' })));
    },
  );
});
