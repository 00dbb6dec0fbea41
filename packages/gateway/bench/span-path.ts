/**
 * What the gateway's spans cost per JSON request, side by side in one process: the two spans the span
 * recorder makes for a tools/call answered with JSON (its request span, a CLIENT span with the
 * recorder's attributes, given its session and status after it started, and its terminal's INTERNAL
 * span, started and ended at the result, before the request span ends), made by the SDK's
 * BasicTracerProvider, as the gateway made them before, and by the detector-only tracer
 * (src/detector-tracer.ts), as it makes them when its built-in detector is their only reader. Each
 * tracer hands its spans to a built-in detector of its own (the same pipeline, metrics and page as the
 * gateway's). Alternating rounds, process.cpuUsage over each.
 *
 *   node --expose-gc --import tsx bench/span-path.ts [--rounds 6] [--requests 100000]
 */
import { ROOT_CONTEXT, SpanKind, trace, type TracerProvider } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { parseArgs } from 'node:util';
import { startEmbeddedDetector } from '@resumewatch/daemon';
import {
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_TERMINAL_DELIVERY,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_OUTCOME,
  ATTR_NETWORK_PROTOCOL_NAME,
  ATTR_NETWORK_TRANSPORT,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_NAME,
  ATTR_GEN_AI_TOOL_NAME,
  MCP_METHOD_TOOLS_CALL,
  SPAN_REQUEST_TERMINAL,
} from '@resumewatch/semconv';
import { DetectorTracerProvider } from '../src/detector-tracer.js';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '6' }, requests: { type: 'string', default: '100000' } },
});
const ROUNDS = Number(values.rounds);
const REQUESTS = Number(values.requests);
const SESSIONS = Array.from({ length: 64 }, (_, i) => `session-${i.toString(16).padStart(32, '0')}`);

const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'resumewatch-gateway' });
const detectorOptions = { config: { metricsPort: 0 }, output: null } as const;
const sdkDetector = await startEmbeddedDetector(detectorOptions);
const lightDetector = await startEmbeddedDetector(detectorOptions);
const providers: Record<'sdk' | 'detector-only', TracerProvider> = {
  sdk: new BasicTracerProvider({ resource, spanProcessors: [sdkDetector.processor] }),
  'detector-only': new DetectorTracerProvider(lightDetector.processor, resource),
};
const tracers = {
  sdk: providers.sdk.getTracer('@resumewatch/instrumentation'),
  'detector-only': providers['detector-only'].getTracer('@resumewatch/instrumentation'),
};

let next = 0;
function requests(name: keyof typeof tracers, n: number): void {
  const tracer = tracers[name];
  for (let i = 0; i < n; i++) {
    const id = String(next++);
    const session = SESSIONS[next % SESSIONS.length]!;
    const span = tracer.startSpan(
      `${MCP_METHOD_TOOLS_CALL} weather`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [ATTR_MCP_METHOD_NAME]: MCP_METHOD_TOOLS_CALL,
          [ATTR_JSONRPC_REQUEST_ID]: id,
          [ATTR_NETWORK_TRANSPORT]: 'tcp',
          [ATTR_NETWORK_PROTOCOL_NAME]: 'http',
          [ATTR_SERVER_ADDRESS]: '127.0.0.1',
          [ATTR_SERVER_PORT]: 8080,
          [ATTR_MCP_SESSION_ID]: session,
          [ATTR_MCP_PROTOCOL_VERSION]: '2025-06-18',
          [ATTR_GEN_AI_TOOL_NAME]: 'weather',
        },
      },
      ROOT_CONTEXT,
    );
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, 200);
    tracer
      .startSpan(
        SPAN_REQUEST_TERMINAL,
        {
          kind: SpanKind.INTERNAL,
          attributes: {
            [ATTR_JSONRPC_REQUEST_ID]: id,
            [ATTR_MCP_METHOD_NAME]: MCP_METHOD_TOOLS_CALL,
            [ATTR_MCP_STREAM_ID]: `json-${id}`,
            [ATTR_MCP_TERMINAL_OUTCOME]: 'result',
            [ATTR_MCP_TERMINAL_DUPLICATE]: false,
            [ATTR_MCP_TERMINAL_DELIVERY]: 'delivered',
            [ATTR_MCP_SESSION_ID]: session,
            [ATTR_MCP_PROTOCOL_VERSION]: '2025-06-18',
            [ATTR_GEN_AI_TOOL_NAME]: 'weather',
            [ATTR_SERVER_ADDRESS]: '127.0.0.1',
            [ATTR_SERVER_PORT]: 8080,
          },
        },
        trace.setSpan(ROOT_CONTEXT, span),
      )
      .end();
    span.end();
  }
}

const gc = (globalThis as { gc?: () => void }).gc;
const names = Object.keys(tracers) as (keyof typeof tracers)[];
const perRequest: Record<string, number[]> = { sdk: [], 'detector-only': [] };
requests('sdk', Math.min(20_000, REQUESTS));
requests('detector-only', Math.min(20_000, REQUESTS));
for (let round = 0; round < ROUNDS; round++) {
  for (const name of round % 2 === 0 ? names : [...names].reverse()) {
    gc?.();
    const c0 = process.cpuUsage();
    requests(name, REQUESTS);
    const c = process.cpuUsage(c0);
    perRequest[name]!.push((c.user + c.system) / REQUESTS);
  }
}
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const ratios = perRequest['detector-only']!.map((d, i) => d / perRequest.sdk![i]!);
console.log(
  `µs CPU per JSON request (two spans into the built-in detector), ${ROUNDS} alternating rounds of ${REQUESTS}:\n` +
    `  SDK BasicTracerProvider: ${perRequest.sdk!.map((x) => x.toFixed(2)).join(' ')} (median ${median(perRequest.sdk!).toFixed(2)})\n` +
    `  detector-only tracer:    ${perRequest['detector-only']!.map((x) => x.toFixed(2)).join(' ')} (median ${median(perRequest['detector-only']!).toFixed(2)})\n` +
    `  ratio by round: ${ratios.map((x) => x.toFixed(2)).join(' ')}`,
);
await Promise.all([sdkDetector.close(), lightDetector.close()]);
