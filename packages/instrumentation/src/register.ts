/**
 * `node --import @resumewatch/instrumentation/register app.js`: starts the OpenTelemetry Node SDK with
 * McpResumeInstrumentation (SDK transports patched, and every MCP exchange through the global fetch)
 * and McpServerInstrumentation (SDK server transports and their event stores), the OTLP/HTTP trace
 * exporter, configured by the standard OTEL_* environment variables, and registers the ESM loader hook
 * so ESM imports of the MCP SDK are patched. Spans are flushed at exit, including `process.exit()`
 * (see exit-flush.ts), which is left as it is.
 *
 * The only module of this package that brings in an OpenTelemetry SDK: `@opentelemetry/sdk-node` and
 * `@opentelemetry/exporter-trace-otlp-http` are its optional peer dependencies, installed by the
 * application that uses `register`. An application with its own SDK uses the library (instrumentFetch,
 * McpResumeInstrumentation) and gets no second SDK.
 */
import { register } from 'node:module';
import { diag, trace } from '@opentelemetry/api';
import type { ProxyTracerProvider } from '@opentelemetry/api';
import { ExitSafeExporter, exportAtExit } from './exit-flush.js';
import { releaseHeldPolls } from './held-polls.js';
import { idOptionsFromEnv } from './id-policy.js';
import { McpResumeInstrumentation } from './instrumentation.js';
import { McpServerInstrumentation } from './server-instrumentation.js';
import { TRACER_SCOPE } from './semconv.js';

const [{ NodeSDK }, { OTLPTraceExporter }] = await Promise.all([
  import('@opentelemetry/sdk-node'),
  import('@opentelemetry/exporter-trace-otlp-http'),
]).catch((error: unknown) => {
  throw new Error(
    '@resumewatch/instrumentation/register starts the OpenTelemetry Node SDK: install @opentelemetry/sdk-node ' +
      'and @opentelemetry/exporter-trace-otlp-http (its optional peer dependencies) next to it',
    { cause: error },
  );
});

register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);

// This package emits traces only; the SDK would otherwise start OTLP metric and log exporters too.
process.env.OTEL_METRICS_EXPORTER ??= 'none';
process.env.OTEL_LOGS_EXPORTER ??= 'none';

// Without an explicit exporter choice, OTLP over HTTP (JSON); otherwise the SDK follows the environment.
const exporterFromEnv =
  process.env.OTEL_TRACES_EXPORTER ||
  process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ||
  process.env.OTEL_EXPORTER_OTLP_PROTOCOL;

// RESUMEWATCH_INSTRUMENT: which sides to instrument, `client`, `server` or both (the default).
const sides = new Set((process.env.RESUMEWATCH_INSTRUMENT ?? 'client,server').split(',').map((side) => side.trim()));
const requestTimeoutMs = requestTimeoutFromEnv(process.env.RESUMEWATCH_REQUEST_TIMEOUT_MS);
// Id policy from RESUMEWATCH_ID_POLICY / RESUMEWATCH_ID_KEY; a bad setting warns and omits ids.
const client = sides.has('client')
  ? new McpResumeInstrumentation({
      globalFetch: true,
      ...idOptionsFromEnv(),
      ...(requestTimeoutMs !== undefined ? { requestTimeoutMs } : {}),
    })
  : undefined;
const server = sides.has('server') ? new McpServerInstrumentation() : undefined;
// register's own exporter (the environment chose none), kept at a process.exit() for the exit export.
const exporter = exporterFromEnv ? undefined : new ExitSafeExporter(new OTLPTraceExporter());
const sdk = new NodeSDK({
  instrumentations: [client, server].filter((i) => i !== undefined),
  ...(exporter ? { traceExporter: exporter } : {}),
});
sdk.start();

let shuttingDown: Promise<void> | undefined;
/** Ends the SDK once, exporting what it holds. Safe to call (and await) more than once. */
export function shutdown(): Promise<void> {
  // Polls still held (their request's fate unknown) leave as polls, so the shutdown exports them.
  shuttingDown ??= Promise.resolve()
    .then(() => void releaseHeldPolls())
    .then(() => sdk.shutdown())
    .catch((error: unknown) => diag.error('resumewatch: OpenTelemetry SDK shutdown failed', error));
  return shuttingDown;
}

process.once('beforeExit', () => void shutdown());
process.once('SIGTERM', () => {
  // Counted when the signal arrives: an application handler (which may end with process.exit(): the
  // exit export below then takes what this flush has not) decides how the process ends; without one,
  // SIGTERM is re-raised after the flush.
  const handledElsewhere = process.listenerCount('SIGTERM') > 0;
  void shutdown().finally(() => {
    if (!handledElsewhere) process.kill(process.pid, 'SIGTERM');
  });
});
// CLIs end with process.exit(), which skips beforeExit: the spans still in the batch are exported at
// 'exit' by a child process (exit-flush.ts). Only with register's own exporter: one the environment
// chose is the SDK's, and spans it still holds at a process.exit() are lost (beforeExit and SIGTERM flush it).
if (exporter) {
  settleResource();
  exportAtExit(
    exporter,
    // The hand-over is synchronous; the flush's promise settles (or fails: the exporter is unreachable,
    // say) after the process is gone, and must not surface as the application's unhandled rejection.
    () =>
      void ((trace.getTracerProvider() as ProxyTracerProvider).getDelegate() as Flushable)
        .forceFlush?.()
        .catch(() => undefined),
    // Polls still held (their request's fate unknown) leave as polls, with the rest.
    () => void releaseHeldPolls(),
  );
}

interface Flushable {
  forceFlush?(): Promise<void>;
}

/**
 * The SDK's detected resource attributes (host, process, ...) stay pending until someone awaits them;
 * the batch processor awaits them before an export, which at a process.exit() would be too late for
 * the exit export (its hand-over must be synchronous). Awaited now, through the resource of a span
 * that is never ended, so never exported.
 */
function settleResource(): void {
  const probe = trace.getTracer(TRACER_SCOPE).startSpan('resource') as {
    resource?: { waitForAsyncAttributes?(): Promise<void> };
  };
  void probe.resource?.waitForAsyncAttributes?.();
}

/**
 * RESUMEWATCH_REQUEST_TIMEOUT_MS: the client requests' deadline (`requestTimeoutMs`). A bad value is
 * named on one line and the default kept: a typo must not stop the application.
 */
function requestTimeoutFromEnv(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const ms = Number(value);
  if (Number.isSafeInteger(ms) && ms > 0) return ms;
  process.stderr.write(
    `resumewatch: RESUMEWATCH_REQUEST_TIMEOUT_MS must be a positive integer of milliseconds, got "${value}"; using the default\n`,
  );
  return undefined;
}

export { sdk };
