import { SpanKind } from '@opentelemetry/api';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ATTR_MCP_SESSION_ID, SPAN_STREAM_RESUME } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { instrumentEventStore, instrumentServerTransport } from '../src/index.js';
import { McpServerInstrumentation } from '../src/server-instrumentation.js';
import { RawClient } from './helpers/raw-client.js';
import { connectSdkClient } from './helpers/sdk-client.js';
import { sdkServerPerTest } from './helpers/sdk-server.js';
import { attr, captureSpans } from './helpers/spans.js';

const sdkServer = sdkServerPerTest();

/** What `register` does at a transport's first request: instrument its web-standard transport. */
function webStandard(transport: StreamableHTTPServerTransport): object {
  return (transport as unknown as { _webStandardTransport: object })._webStandardTransport;
}

describe('McpServerInstrumentation (register, server side)', () => {
  it('instruments a transport and its event store once, with the session id, and leaves manually instrumented ones alone', async () => {
    const registered = captureSpans();
    const manual = captureSpans();
    const instrumentation = new McpServerInstrumentation({ enabled: false });
    instrumentation.setTracerProvider(registered.provider);

    for (const byHand of [false, true]) {
      const transports: StreamableHTTPServerTransport[] = [];
      const server = await sdkServer({
        closeReplays: true,
        onTransport: (transport) => {
          transports.push(transport);
          if (byHand) instrumentServerTransport(transport, { tracerProvider: manual.provider });
        },
      });
      if (byHand) instrumentEventStore(server.store, { tracerProvider: manual.provider });
      const c = await connectSdkClient(server.url);
      // The transport is connected: what handleRequest finds when register's patch runs.
      for (const t of transports) {
        instrumentation.instrumentTransport(webStandard(t));
        instrumentation.instrumentTransport(webStandard(t));
      }
      await c.client.callTool({ name: 'stream_progress', arguments: { count: 1 } });
      const sessionId = c.transport.sessionId;
      await c.close();
      // A second session, then a replay served by the store: a server resume span.
      const raw = new RawClient(server.url, globalThis.fetch);
      await raw.initialize();
      for (const t of transports.slice(1)) instrumentation.instrumentTransport(webStandard(t));
      const call = await raw.callTool('stream_progress', { count: 1 });
      await raw.resume(call.eventIds[0]!);

      const [mine, other] = byHand ? [manual, registered] : [registered, manual];
      expect(mine.spans('tools/call stream_progress').map((s) => [s.kind, attr(s, ATTR_MCP_SESSION_ID)])).toEqual([
        [SpanKind.SERVER, sessionId],
        [SpanKind.SERVER, raw.sessionId],
      ]);
      expect(mine.spans(SPAN_STREAM_RESUME)).toHaveLength(1);
      expect(other.exporter.getFinishedSpans()).toEqual([]);
      registered.reset();
      manual.reset();
    }
  });
});
