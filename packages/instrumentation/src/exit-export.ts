/**
 * The child of an exiting process (exit-flush.ts): reads the spans it was handed on stdin and exports
 * them with the exporter `register` uses, configured by the same OTEL_* environment, then exits.
 */
import { readFileSync } from 'node:fs';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { tracing } from '@opentelemetry/sdk-node';
import type { ExitBatch } from './exit-flush.js';

const batch = JSON.parse(readFileSync(0, 'utf8')) as ExitBatch;
// One object per resource: the serializer groups spans by resource identity.
const resources = batch.resources.map((r) => r as unknown as tracing.ReadableSpan['resource']);
const spans = batch.spans.map((span): tracing.ReadableSpan => {
  const { spanContext, resource, ...rest } = span;
  return { ...rest, resource: resources[resource]!, spanContext: () => spanContext, ended: true };
});
const exporter = new OTLPTraceExporter();
exporter.export(spans, (result) => {
  void exporter.shutdown().finally(() => process.exit(result.code === 0 ? 0 : 1));
});
