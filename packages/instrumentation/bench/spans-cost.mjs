/**
 * What the OpenTelemetry SDK alone takes for the two spans instrumentFetch emits per tools/call (the
 * request span with its attributes, the request sent within its context, its status set, the terminal
 * span under it), with the provider, processor and context manager of recorder-cost.mjs's `sdk`, no
 * fetch and no recorder. Count it under callgrind with two counts; the difference over the difference
 * of iterations is the SDK's share of recorder-cost.mjs's `sdk` minus `wire`:
 *
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node bench/spans-cost.mjs 1000
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node bench/spans-cost.mjs 5000
 */
import { context, trace, SpanKind } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const exporter = {
  export(spans, done) {
    done({ code: 0 });
  },
  shutdown: async () => undefined,
};
const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] });
const tracer = provider.getTracer('x', '1');
const N = +process.argv[2];
async function one(i) {
  const span = tracer.startSpan(
    'tools/call stream_progress',
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'mcp.method.name': 'tools/call',
        'jsonrpc.request.id': String(i),
        'network.transport': 'tcp',
        'network.protocol.name': 'http',
        'server.address': '127.0.0.1',
        'server.port': 1,
        'mcp.session.id': '972554df-c201-46ea-b7b6-74a87d072999',
        'mcp.protocol.version': '2025-06-18',
        'gen_ai.tool.name': 'stream_progress',
        'gen_ai.operation.name': 'execute_tool',
        'mcp.request.arguments.digest': '0123456789abcdef0123456789abcdef',
      },
    },
    context.active(),
  );
  const sc = span.spanContext();
  await context.with(trace.setSpanContext(context.active(), sc), async () => {
    await null;
  });
  span.setAttribute('http.response.status_code', 200);
  tracer
    .startSpan(
      'mcp.request.terminal',
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          'jsonrpc.request.id': String(i),
          'mcp.method.name': 'tools/call',
          'mcp.stream.id': 'abcdef012345-1',
          'mcp.terminal.outcome': 'result',
          'mcp.terminal.duplicate': false,
          'mcp.terminal.delivery': 'stream',
          'mcp.session.id': '972554df-c201-46ea-b7b6-74a87d072999',
          'mcp.protocol.version': '2025-06-18',
          'gen_ai.tool.name': 'stream_progress',
          'mcp.event.id': 'b8d4ae80.104.254b2bb7-c638-4a5c-8e43-67cbedc40c2c',
          'server.address': '127.0.0.1',
          'server.port': 1,
        },
      },
      trace.setSpanContext(context.active(), sc),
    )
    .end();
  span.end();
}
for (let i = 0; i < N; i++) await one(i);
await provider.forceFlush();
