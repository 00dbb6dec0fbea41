import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { ATTR_GEN_AI_TOOL_NAME, ATTR_MCP_METHOD_NAME } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runModern } from './helpers/modern-run.js';
import { WAIT, capturedFetch } from './helpers/spans.js';

/**
 * instrumentFetch carries its request span's context to the server (the global propagator's headers,
 * W3C `traceparent` here), unless the application already sends one. Under an instrumentation of fetch
 * (instrumentation-undici), which adds a traceparent of its own, that one alone carries the trace.
 */

const TOOL_CALL = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'echo', arguments: { text: 'hi' } },
});

/** A loopback server that answers every POST with a JSON result and keeps the `traceparent` it was sent. */
async function recordingServer(): Promise<{ url: string; received: (string | undefined)[]; close(): Promise<void> }> {
  const received: (string | undefined)[] = [];
  const server = createServer((req, res) => {
    received.push(req.headers.traceparent as string | undefined);
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [] } }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const UNDICI_SCOPE = '@opentelemetry/instrumentation-undici';

/** The request spans of `tool`'s calls (its terminal spans, which name the tool too, left out). */
const isCall = (tool: string) => (s: ReadableSpan) =>
  s.name.startsWith('tools/call') &&
  s.attributes[ATTR_MCP_METHOD_NAME] === 'tools/call' &&
  s.attributes[ATTR_GEN_AI_TOOL_NAME] === tool;

describe('trace context propagation', () => {
  beforeAll(() => {
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    // As the Node SDK registers it: context follows the request into undici.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  });
  afterAll(() => {
    propagation.disable();
    context.disable();
  });

  it('sends the request span as traceparent', async () => {
    const server = await recordingServer();
    try {
      const { capture, fetch } = capturedFetch();
      const response = await fetch(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: TOOL_CALL,
      });
      await response.text();
      const span = await vi.waitFor(
        () => capture.spans().find(isCall('echo')) ?? Promise.reject(new Error('none')),
        WAIT,
      );
      const { traceId, spanId } = span.spanContext();
      expect(server.received).toEqual([`00-${traceId}-${spanId}-01`]);
    } finally {
      await server.close();
    }
  });

  it("leaves the application's own traceparent as it is", async () => {
    const server = await recordingServer();
    try {
      const { fetch } = capturedFetch();
      const own = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      const response = await fetch(server.url, {
        method: 'POST',
        headers: [
          ['content-type', 'application/json'],
          ['Traceparent', own],
        ],
        body: TOOL_CALL,
      });
      await response.text();
      expect(server.received).toEqual([own]);
    } finally {
      await server.close();
    }
  });

  it("under instrumentation-undici, sends one traceparent: undici's span, the request span's child", async () => {
    const server = await recordingServer();
    const { capture, fetch } = capturedFetch();
    // Enabled as constructed, as auto-instrumentations-node enables it: it subscribes to undici's channels.
    const undici = new UndiciInstrumentation();
    undici.setTracerProvider(capture.provider);
    try {
      const response = await fetch(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: TOOL_CALL,
      });
      await response.text();
      const [request, http] = await vi.waitFor(() => {
        const request = capture.spans().find(isCall('echo'));
        const http = capture.spans().find((s) => s.instrumentationScope.name === UNDICI_SCOPE);
        if (request === undefined || http === undefined) throw new Error('not yet');
        return [request, http];
      }, WAIT);
      // One header, not two folded into a value the server's propagator refuses.
      expect(server.received).toEqual([`00-${http.spanContext().traceId}-${http.spanContext().spanId}-01`]);
      expect(http.spanContext().traceId).toBe(request.spanContext().traceId);
      expect(http.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
      // A proxy (the gateway) sends its requests itself, not through undici: it still gets the headers.
      const proxied = fetch.observer.proxyRequest(server.url, { method: 'POST', body: TOOL_CALL });
      expect(fetch.observer.addedHeaders(proxied, {})?.map(([name]) => name)).toEqual(['traceparent']);
    } finally {
      undici.disable();
      await server.close();
    }
  });

  it("puts the real v2 server's span of each call in the client's trace, under the client's span", async () => {
    const { client, server } = await runModern('modern-broken-reissue');
    const sent = await vi.waitFor(() => {
      const spans = client.spans().filter(isCall('charge'));
      expect(spans).toHaveLength(2);
      return spans;
    }, WAIT);
    const served = await vi.waitFor(() => {
      const spans = server.spans().filter(isCall('charge'));
      expect(spans).toHaveLength(2);
      return spans;
    }, WAIT);
    const parent = (s: ReadableSpan) => `${s.spanContext().traceId}/${s.parentSpanContext?.spanId}`;
    const own = (s: ReadableSpan) => `${s.spanContext().traceId}/${s.spanContext().spanId}`;
    expect(served.map(parent).sort()).toEqual(sent.map(own).sort());
  }, 30_000);
});
