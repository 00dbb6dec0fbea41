// The client's trace context read by a propagator other than W3C's: the gateway reads the request's
// context only when one of the propagator's fields (`fields()`) is among its headers, and then
// exactly as before; with no W3C propagator, the upstream's headers are the propagator's own inject.
import { SpanKind, TraceFlags, context, propagation, trace } from '@opentelemetry/api';
import type { TextMapPropagator } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { ATTR_MCP_METHOD_NAME } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerGatewayTraceContext } from '../src/index.js';
import { send } from './helpers/raw-client.js';
import { rigPerTest } from './helpers/scripted-upstream.js';

const CLIENT_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CLIENT_SPAN = 'b7ad6b7169203331';
let extracts = 0;

/** A vendor's propagator: one header, `X-Vendor-Trace: <trace id>:<span id>`, named in mixed case by its fields(). */
const vendor: TextMapPropagator = {
  inject(ctx, carrier, setter) {
    const span = trace.getSpanContext(ctx);
    if (span) setter.set(carrier, 'x-vendor-trace', `${span.traceId}:${span.spanId}`);
  },
  extract(ctx, carrier, getter) {
    extracts++;
    const value = getter.get(carrier, 'x-vendor-trace');
    const [traceId, spanId] = typeof value === 'string' ? value.split(':') : [];
    if (!traceId || !spanId) return ctx;
    return trace.setSpanContext(ctx, { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true });
  },
  fields: () => ['X-Vendor-Trace'],
};

beforeAll(() => {
  registerGatewayTraceContext();
  propagation.disable();
  propagation.setGlobalPropagator(vendor);
});
afterAll(() => {
  propagation.disable();
  context.disable();
});

const rig = rigPerTest();
const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const call = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {} } });

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
    const span = exporter
      .getFinishedSpans()
      .find((s) => s.kind === SpanKind.CLIENT && s.attributes[ATTR_MCP_METHOD_NAME] === 'tools/call');
    if (span === undefined) throw new Error('no tools/call request span');
    return span;
  };
  return { upstream, endpoint, callSpan };
}

describe('the gateway under a propagator other than W3C', () => {
  it("the client's context in the propagator's own header: the gateway's span is its child, and the upstream's parent", async () => {
    const { upstream, endpoint, callSpan } = await gatewayWithSpans();
    const before = extracts;
    await send(endpoint, {
      method: 'POST',
      headers: { ...json, 'X-Vendor-Trace': `${CLIENT_TRACE}:${CLIENT_SPAN}` },
      body: call,
    });
    expect(extracts).toBe(before + 1);
    const span = callSpan();
    expect(span.spanContext().traceId).toBe(CLIENT_TRACE);
    expect(span.parentSpanContext?.spanId).toBe(CLIENT_SPAN);
    const sent = upstream.seen[0]!;
    expect(sent.headers['x-vendor-trace']).toBe(`${CLIENT_TRACE}:${span.spanContext().spanId}`);
    expect(sent.headers.traceparent).toBeUndefined();
  });

  it("none of the propagator's fields: nothing extracted, the gateway's span a root, sent in the propagator's header", async () => {
    const { upstream, endpoint, callSpan } = await gatewayWithSpans();
    const before = extracts;
    // A W3C traceparent is no field of this propagator's: it passes as the client sent it.
    const traceparent = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;
    await send(endpoint, { method: 'POST', headers: { ...json, traceparent }, body: call });
    expect(extracts).toBe(before);
    const span = callSpan();
    expect(span.parentSpanContext).toBeUndefined();
    expect(span.spanContext().traceId).not.toBe(CLIENT_TRACE);
    const sent = upstream.seen[0]!;
    expect(sent.headers['x-vendor-trace']).toBe(`${span.spanContext().traceId}:${span.spanContext().spanId}`);
    expect(sent.headers.traceparent).toBe(traceparent);
  });
});
