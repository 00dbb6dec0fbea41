import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { TracerProvider } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { EmbeddedDetector } from '@resumewatch/daemon';
import { ATTR_SERVICE_NAME } from '@resumewatch/semconv';
import { DetectorTracerProvider } from './detector-tracer.js';
import { PooledIdGenerator } from './pooled-ids.js';

const DEFAULT_SERVICE_NAME = 'resumewatch-gateway';

/**
 * The variables by which the SDK's BasicTracerProvider would make its spans otherwise than the
 * detector-only tracer does (its sampler, its limits): with any of them set, the spans are the SDK's.
 */
const SDK_SPAN_VARIABLES = [
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT',
  'OTEL_ATTRIBUTE_COUNT_LIMIT',
  'OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT',
  'OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT',
  'OTEL_SPAN_LINK_COUNT_LIMIT',
  'OTEL_SPAN_EVENT_COUNT_LIMIT',
  'OTEL_SPAN_ATTRIBUTE_PER_EVENT_COUNT_LIMIT',
  'OTEL_SPAN_ATTRIBUTE_PER_LINK_COUNT_LIMIT',
];

export interface GatewayTracing {
  readonly provider: TracerProvider;
  /** Hands every ended span to the detector and the exporter now. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * The gateway's own tracer provider: every span goes to the built-in detector as it ends, and, when
 * the standard OTLP endpoint variables are set, to a central `resumewatch serve` or a Collector too.
 * When the built-in detector is the spans' only reader (no exporter, no other span processor, the
 * SDK's default sampler and limits), they are not the SDK's spans: the detector-only tracer
 * (detector-tracer.ts) makes of each ended span the record the detector's processor would make, and
 * feeds it to the detector (`EmbeddedDetector.ingest`), without the SDK's span objects, processor chain
 * and metrics on the data path, nor a span read back into a record.
 */
export function gatewayTracing(options: {
  detector: EmbeddedDetector | undefined;
  spanProcessors?: readonly SpanProcessor[] | undefined;
  serviceName?: string | undefined;
  env?: NodeJS.ProcessEnv;
}): GatewayTracing {
  const env = options.env ?? process.env;
  const processors: SpanProcessor[] = [];
  if (options.detector) {
    processors.push(options.detector.processor);
    // Each of the gateway's request spans is an exchange it forwarded: the server's operation as its clients see it.
    options.detector.metrics.timeServerOperationsAtProxy();
  }
  if (env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
    processors.push(new BatchSpanProcessor(new OTLPTraceExporter()));
  processors.push(...(options.spanProcessors ?? []));
  const resource = resourceFromAttributes({
    [ATTR_SERVICE_NAME]: options.serviceName ?? (env.OTEL_SERVICE_NAME || DEFAULT_SERVICE_NAME),
  });
  const detectorOnly =
    options.detector !== undefined && processors.length === 1 && !SDK_SPAN_VARIABLES.some((name) => env[name]);
  // Ids from a pool of crypto random bytes on both paths: the SDK's generator draws four Math.random()s an id.
  const idGenerator = new PooledIdGenerator();
  const provider = detectorOnly
    ? new DetectorTracerProvider(options.detector!.ingest, resource, idGenerator)
    : new BasicTracerProvider({ resource, spanProcessors: processors, idGenerator });
  let shutdown: Promise<void> | undefined;
  return {
    provider,
    flush: () => provider.forceFlush(),
    shutdown: () => (shutdown ??= provider.shutdown()),
  };
}
