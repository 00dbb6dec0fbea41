import { ROOT_CONTEXT, context, propagation, trace } from '@opentelemetry/api';
import type { Context, ContextManager } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * The active context of a synchronous call only: `with` sets it for the call and restores it after.
 * The gateway's spans begin synchronously in the call that observes a request, so this is all the
 * scope they need; an async-aware manager (AsyncLocalStorage, on Node 20 through async hooks) would
 * add a cost to every promise of the data path.
 */
class SyncContextManager implements ContextManager {
  private current: Context = ROOT_CONTEXT;

  active(): Context {
    return this.current;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    scope: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    const previous = this.current;
    this.current = scope;
    try {
      return fn.call(thisArg, ...args);
    } finally {
      this.current = previous;
    }
  }

  bind<T>(scope: Context, target: T): T {
    if (typeof target !== 'function') return target;
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const manager = this;
    return function (this: unknown, ...args: unknown[]) {
      return manager.with(scope, () => (target as (...a: unknown[]) => unknown).apply(this, args));
    } as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.current = ROOT_CONTEXT;
    return this;
  }
}

/**
 * The gateway process's trace context: W3C `traceparent` in and out, and the scope a request's span
 * begins in (the client's context, when it sent one). For `resumewatch gateway`, whose process is the
 * gateway's; an application that embeds `startGateway` registers its own.
 */
export function registerGatewayTraceContext(): void {
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  context.setGlobalContextManager(new SyncContextManager());
}

/**
 * Runs `begin` within the trace context the client sent, so the gateway's span of the request is the
 * client span's child. `joined` is true when it is: the client sent a valid context and a context
 * manager carried it into `begin`. Only then does the gateway's `traceparent` replace the client's
 * upstream: the server's span is then the gateway span's child, in the client's trace.
 */
export function beginInClientContext<T>(headers: IncomingHttpHeaders, begin: () => T): { result: T; joined: boolean } {
  const client = propagation.extract(ROOT_CONTEXT, headers);
  if (trace.getSpanContext(client) === undefined) return { result: begin(), joined: false };
  let joined = false;
  const result = context.with(client, () => {
    joined = context.active() === client;
    return begin();
  });
  return { result, joined };
}

/** The trace context headers the propagator writes (`traceparent`, `tracestate`), lower-case. */
export function traceContextFields(): string[] {
  return propagation.fields().map((name) => name.toLowerCase());
}
