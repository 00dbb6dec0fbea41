/**
 * `node --import @resumewatch/instrumentation/register app.js`: starts the OpenTelemetry Node SDK with
 * McpResumeInstrumentation and the OTLP/HTTP trace exporter, configured by the standard OTEL_*
 * environment variables, and registers the ESM loader hook so ESM imports of the MCP SDK are patched.
 */
import { register } from 'node:module';
import { diag } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { idOptionsFromEnv } from './id-policy.js';
import { McpResumeInstrumentation } from './instrumentation.js';

register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);

// This package emits traces only; the SDK would otherwise start OTLP metric and log exporters too.
process.env.OTEL_METRICS_EXPORTER ??= 'none';
process.env.OTEL_LOGS_EXPORTER ??= 'none';

// Without an explicit exporter choice, OTLP over HTTP (JSON); otherwise the SDK follows the environment.
const exporterFromEnv =
  process.env.OTEL_TRACES_EXPORTER || process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || process.env.OTEL_EXPORTER_OTLP_PROTOCOL;

const sdk = new NodeSDK({
  // Id policy from RESUMEWATCH_ID_POLICY / RESUMEWATCH_ID_KEY; a bad setting warns and omits ids.
  instrumentations: [new McpResumeInstrumentation(idOptionsFromEnv())],
  ...(exporterFromEnv ? {} : { traceExporter: new OTLPTraceExporter() }),
});
sdk.start();

let shuttingDown: Promise<void> | undefined;
function shutdown(): Promise<void> {
  shuttingDown ??= sdk.shutdown().catch((error: unknown) => diag.error('resumewatch: OpenTelemetry SDK shutdown failed', error));
  return shuttingDown;
}

process.once('beforeExit', () => void shutdown());
process.once('SIGTERM', () => {
  void shutdown().finally(() => {
    // Without another handler, re-raise so the process ends as SIGTERM would have ended it.
    if (process.listenerCount('SIGTERM') === 0) process.kill(process.pid, 'SIGTERM');
  });
});

export { sdk };
