import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { EmbeddedDetector } from '@resumewatch/daemon';
import { ATTR_SERVICE_NAME } from '@resumewatch/semconv';

const DEFAULT_SERVICE_NAME = 'resumewatch-gateway';

export interface GatewayTracing {
  readonly provider: BasicTracerProvider;
  /** Hands every ended span to the detector and the exporter now. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * The gateway's own tracer provider: every span goes to the built-in detector as it ends, and, when
 * the standard OTLP endpoint variables are set, to a central `resumewatch serve` or a Collector too.
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
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: options.serviceName ?? (env.OTEL_SERVICE_NAME || DEFAULT_SERVICE_NAME),
    }),
    spanProcessors: processors,
  });
  let shutdown: Promise<void> | undefined;
  return {
    provider,
    flush: () => provider.forceFlush(),
    shutdown: () => (shutdown ??= provider.shutdown()),
  };
}
