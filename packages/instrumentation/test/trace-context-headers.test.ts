import { ROOT_CONTEXT, TraceFlags, context, propagation, trace } from '@opentelemetry/api';
import type { Context, SpanContext, TextMapPropagator, TextMapSetter } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  CompositePropagator,
  TraceState,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
  suppressTracing,
} from '@opentelemetry/core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { traceContextHeaders } from '../src/trace-propagation.js';

/**
 * The headers the recorder sends with a request for its span: with @opentelemetry/core's W3C propagator
 * they are written without its inject, and must be exactly what its inject writes; with any other
 * propagator its inject writes them.
 */

const SPANS: SpanContext[] = [
  { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.SAMPLED },
  { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: TraceFlags.NONE },
  {
    traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    spanId: '00f067aa0ba902b7',
    traceFlags: TraceFlags.SAMPLED,
    traceState: new TraceState('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE'),
  },
  { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 0x13 },
  { traceId: '00000000000000000000000000000000', spanId: '00f067aa0ba902b7', traceFlags: TraceFlags.SAMPLED },
  { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '0000000000000000', traceFlags: TraceFlags.SAMPLED },
];

const setter: TextMapSetter<Record<string, string>> = { set: (carrier, key, value) => (carrier[key] = value) };

function injected(propagator: TextMapPropagator, span: SpanContext, active: Context): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagator.inject(trace.setSpanContext(active, span), carrier, setter);
  return carrier;
}

beforeAll(() => context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable()));
afterAll(() => context.disable());
afterEach(() => {
  propagation.disable();
  vi.restoreAllMocks();
});

describe('traceContextHeaders', () => {
  it("with core's W3C propagator: what its inject writes, written without it after a first proof", () => {
    const w3c = new W3CTraceContextPropagator();
    propagation.setGlobalPropagator(w3c);
    const inject = vi.spyOn(W3CTraceContextPropagator.prototype, 'inject');
    const written = SPANS.map((span) => traceContextHeaders(span));
    const suppressed = context.with(suppressTracing(ROOT_CONTEXT), () => traceContextHeaders(SPANS[0]!));
    // One call: the proof, for this propagator, once.
    expect(inject).toHaveBeenCalledTimes(1);
    inject.mockRestore();
    expect(written).toEqual(SPANS.map((span) => injected(w3c, span, ROOT_CONTEXT)));
    expect(written[2]).toEqual({
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      tracestate: 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE',
    });
    expect(written[4]).toEqual({});
    expect(suppressed).toEqual({});
    expect(suppressed).toEqual(injected(w3c, SPANS[0]!, suppressTracing(ROOT_CONTEXT)));
  });

  it('with any other propagator, or a W3C one with an inject of its own: its inject', () => {
    class Vendor extends W3CTraceContextPropagator {
      override inject(ctx: Context, carrier: unknown, set: TextMapSetter): void {
        super.inject(ctx, carrier, set);
        set.set(carrier, 'x-vendor', 'on');
      }
    }
    const ownInject = new W3CTraceContextPropagator();
    ownInject.inject = (ctx, carrier, set) => set.set(carrier, 'traceparent', 'instance');
    const b3ish: TextMapPropagator = {
      inject: (ctx, carrier, set) => set.set(carrier, 'b3', `${trace.getSpanContext(ctx)!.traceId}-x`),
      extract: (ctx) => ctx,
      fields: () => ['b3'],
    };
    const composite = new CompositePropagator({
      propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
    });
    for (const propagator of [new Vendor(), ownInject, b3ish, composite]) {
      propagation.disable();
      propagation.setGlobalPropagator(propagator);
      for (const span of SPANS) expect(traceContextHeaders(span)).toEqual(injected(propagator, span, ROOT_CONTEXT));
    }
    expect(traceContextHeaders(SPANS[0]!)).toEqual({
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });
    propagation.disable();
    propagation.setGlobalPropagator(new Vendor());
    expect(traceContextHeaders(SPANS[0]!)['x-vendor']).toBe('on');
  });

  it('without a global propagator: no headers', () => {
    expect(traceContextHeaders(SPANS[0]!)).toEqual({});
  });
});
