import { DEFAULT_DETECTOR_OPTIONS, type DetectorOptions } from './core/options.js';

/** Everything the three doors share, from flags and environment. */
export interface ResumewatchConfig extends DetectorOptions {
  host: string;
  port: number;
  /** false: no gRPC receiver. */
  grpcPort: number | false;
  metricsPort: number;
  token: string | undefined;
  /** Largest request body accepted on the wire (413 above). */
  maxBodyBytes: number;
  /** Largest body after gzip decompression, and largest gRPC message (413 / RESOURCE_EXHAUSTED above). */
  maxDecompressedBytes: number;
  /** Distinct `service` label values; the rest are reported as `other`. */
  maxServices: number;
  /** Findings kept for GET /findings. */
  findingsBuffer: number;
}

export const DEFAULT_CONFIG: ResumewatchConfig = {
  ...DEFAULT_DETECTOR_OPTIONS,
  host: '127.0.0.1',
  port: 4318,
  grpcPort: 4317,
  metricsPort: 9464,
  token: undefined,
  maxBodyBytes: 8 * 1024 * 1024,
  maxDecompressedBytes: 32 * 1024 * 1024,
  maxServices: 100,
  findingsBuffer: 1000,
};

type Kind = 'int' | 'duration' | 'string' | 'port';

/** One row of the configuration table: flag, environment variable, type, meaning. */
export interface OptionSpec {
  key: keyof ResumewatchConfig;
  flag: string;
  env: string;
  kind: Kind;
  help: string;
}

export const OPTION_SPECS: readonly OptionSpec[] = [
  { key: 'stormThreshold', flag: 'storm-threshold', env: 'RESUMEWATCH_STORM_THRESHOLD', kind: 'int', help: 'attempts within the window that make a reconnect storm' },
  { key: 'stormWindowMs', flag: 'storm-window', env: 'RESUMEWATCH_STORM_WINDOW', kind: 'duration', help: 'storm window; a storm also ends when it passes quietly' },
  { key: 'settleMs', flag: 'settle', env: 'RESUMEWATCH_SETTLE', kind: 'duration', help: 'wait after a storm ends before its signature, for late spans' },
  { key: 'maxRequests', flag: 'max-requests', env: 'RESUMEWATCH_MAX_REQUESTS', kind: 'int', help: 'cap on tracked (service, session, request) states' },
  { key: 'retentionMs', flag: 'retention', env: 'RESUMEWATCH_RETENTION', kind: 'duration', help: 'idle time after which a request state is released' },
  { key: 'dedupeCapacity', flag: 'dedupe', env: 'RESUMEWATCH_DEDUPE', kind: 'int', help: 'span ids remembered to drop redelivered spans' },
  { key: 'host', flag: 'host', env: 'RESUMEWATCH_HOST', kind: 'string', help: 'address every listener binds to' },
  { key: 'port', flag: 'port', env: 'RESUMEWATCH_PORT', kind: 'port', help: 'OTLP/HTTP port (POST /v1/traces)' },
  { key: 'grpcPort', flag: 'grpc-port', env: 'RESUMEWATCH_GRPC_PORT', kind: 'port', help: 'OTLP/gRPC port; "off" disables it' },
  { key: 'metricsPort', flag: 'metrics-port', env: 'RESUMEWATCH_METRICS_PORT', kind: 'port', help: 'port of /metrics, /healthz and /findings' },
  { key: 'token', flag: 'token', env: 'RESUMEWATCH_TOKEN', kind: 'string', help: 'bearer token required by every endpoint but /healthz' },
  { key: 'maxBodyBytes', flag: 'max-body', env: 'RESUMEWATCH_MAX_BODY', kind: 'int', help: 'largest request body in bytes' },
  { key: 'maxDecompressedBytes', flag: 'max-decompressed', env: 'RESUMEWATCH_MAX_DECOMPRESSED', kind: 'int', help: 'largest decompressed body or gRPC message in bytes' },
  { key: 'maxServices', flag: 'max-services', env: 'RESUMEWATCH_MAX_SERVICES', kind: 'int', help: 'distinct service label values before "other"' },
  { key: 'findingsBuffer', flag: 'findings-buffer', env: 'RESUMEWATCH_FINDINGS_BUFFER', kind: 'int', help: 'findings kept for GET /findings' },
];

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Parses "250ms", "60s", "10m", "1h" or a bare number of seconds into milliseconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new ConfigError(`not a duration: "${text}" (use e.g. 500ms, 60s, 10m)`);
  const n = Number(m[1]);
  const unit = m[2] ?? 's';
  return n * (unit === 'ms' ? 1 : unit === 's' ? 1000 : unit === 'm' ? 60_000 : 3_600_000);
}

function parseValue(spec: OptionSpec, text: string, source: string): ResumewatchConfig[keyof ResumewatchConfig] {
  switch (spec.kind) {
    case 'string':
      return text;
    case 'duration':
      try {
        return parseDuration(text);
      } catch (e) {
        throw new ConfigError(`${source}: ${(e as Error).message}`);
      }
    case 'port': {
      if (spec.key === 'grpcPort' && (text === 'off' || text === 'false')) return false;
      const n = Number(text);
      if (!Number.isInteger(n) || n < 0 || n > 65535) throw new ConfigError(`${source}: not a port: "${text}"`);
      return n;
    }
    case 'int': {
      const n = Number(text);
      if (!Number.isInteger(n) || n < 1) throw new ConfigError(`${source}: not a positive integer: "${text}"`);
      return n;
    }
  }
}

/** Defaults, then environment, then flags (parseArgs string values keyed by flag name). */
export function resolveConfig(flags: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): ResumewatchConfig {
  const out: Record<string, unknown> = { ...DEFAULT_CONFIG };
  for (const spec of OPTION_SPECS) {
    const e = env[spec.env];
    if (e !== undefined && e !== '') out[spec.key] = parseValue(spec, e, spec.env);
    const f = flags[spec.flag];
    if (typeof f === 'string') out[spec.key] = parseValue(spec, f, `--${spec.flag}`);
  }
  return out as unknown as ResumewatchConfig;
}

/** parseArgs option definitions for every shared flag. */
export function configArgs(): Record<string, { type: 'string' }> {
  const out: Record<string, { type: 'string' }> = {};
  for (const spec of OPTION_SPECS) out[spec.flag] = { type: 'string' };
  return out;
}
