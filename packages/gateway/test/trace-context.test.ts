// The gateway in a client's trace: a client that sends trace context (W3C `traceparent`) gets the
// gateway's request span as its span's child, and the upstream gets the gateway's span as its parent:
// client, gateway and server in one trace. As `resumewatch gateway` sets it up (registerGatewayTraceContext).
import { SpanKind, context, propagation } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { ATTR_MCP_METHOD_NAME } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerGatewayTraceContext } from '../src/index.js';
import { send } from './helpers/raw-client.js';
import { rigPerTest } from './helpers/scripted-upstream.js';

beforeAll(() => registerGatewayTraceContext());
afterAll(() => {
  propagation.disable();
  context.disable();
});

const rig = rigPerTest();
const CLIENT_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CLIENT_SPAN = 'b7ad6b7169203331';
const CLIENT_TRACEPARENT = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;
const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const call = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {} } });
const notification = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' });

async function gatewayWithSpans() {
  const exporter = new InMemorySpanExporter();
  const { upstream, endpoint } = await rig(
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [] } }));
    },
    { spanProcessors: [new SimpleSpanProcessor(exporter)] },
  );
  const callSpan = (): ReadableSpan => {
    // The request span (CLIENT); its terminal event's span is its child.
    const span = exporter
      .getFinishedSpans()
      .find((s) => s.kind === SpanKind.CLIENT && s.attributes[ATTR_MCP_METHOD_NAME] === 'tools/call');
    if (span === undefined) throw new Error('no tools/call request span');
    return span;
  };
  return { upstream, endpoint, callSpan };
}

describe('the gateway in the trace of its client', () => {
  it("a client's traceparent: the gateway's span is its span's child, and the upstream's parent", async () => {
    const { upstream, endpoint, callSpan } = await gatewayWithSpans();
    const response = await send(endpoint, {
      method: 'POST',
      headers: { ...json, traceparent: CLIENT_TRACEPARENT, tracestate: 'vendor=opaque' },
      body: call,
    });
    expect(response.status).toBe(200);
    const span = callSpan();
    expect(span.spanContext().traceId).toBe(CLIENT_TRACE);
    expect(span.parentSpanContext?.spanId).toBe(CLIENT_SPAN);
    // One traceparent upstream, the gateway's span's, and the client's tracestate carried on.
    const sent = upstream.seen[0]!;
    expect(sent.headers.traceparent).toBe(`00-${CLIENT_TRACE}-${span.spanContext().spanId}-01`);
    expect(sent.headers.tracestate).toBe('vendor=opaque');
    expect(sent.rawHeaders.filter((_, i) => i % 2 === 0 && /^traceparent$/i.test(sent.rawHeaders[i]!))).toHaveLength(1);
  });

  it("no trace context from the client: the gateway's span is a root, and the upstream's parent", async () => {
    const { upstream, endpoint, callSpan } = await gatewayWithSpans();
    await send(endpoint, { method: 'POST', headers: json, body: call });
    const span = callSpan();
    expect(span.parentSpanContext).toBeUndefined();
    expect(upstream.seen[0]!.headers.traceparent).toBe(
      `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`,
    );
  });

  it("a request the gateway has no span for (a notification): the client's traceparent passes as it is", async () => {
    const { upstream, endpoint } = await gatewayWithSpans();
    await send(endpoint, { method: 'POST', headers: { ...json, traceparent: CLIENT_TRACEPARENT }, body: notification });
    expect(upstream.seen[0]!.headers.traceparent).toBe(CLIENT_TRACEPARENT);
  });
});
