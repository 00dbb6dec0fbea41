import { DEFAULT_DETECTOR_OPTIONS, type DetectorOptions, DEFAULT_MAX_ID_BYTES } from '@resumewatch/detector';
import { checkAllowedHosts, checkAllowedOrigins } from './host-policy.js';
import { DEFAULT_MAX_SERVICES } from './metrics.js';
import { DEFAULT_MAX_TOOLS } from './operation-histogram.js';

/** Everything the three doors share, from flags and environment. */
export interface ResumewatchConfig extends DetectorOptions {
  host: string;
  port: number;
  /** false: no gRPC receiver. */
  grpcPort: number | false;
  metricsPort: number;
  /**
   * Names the `Host` of a request to the metrics port (and the gateway's proxy) may carry; undefined:
   * loopback names when `host` is a loopback address, any name otherwise (host-policy.ts).
   */
  allowedHosts: readonly string[] | undefined;
  /** Origins a cross-origin request may come from; undefined: an allowed host's (host-policy.ts). */
  allowedOrigins: readonly string[] | undefined;
  token: string | undefined;
  /** Largest request body accepted on the wire (413 above). */
  maxBodyBytes: number;
  /** Largest body after gzip decompression, and largest gRPC message (413 / RESOURCE_EXHAUSTED above). */
  maxDecompressedBytes: number;
  /** Distinct `service` label values; the rest are reported as `other`. */
  maxServices: number;
  /** Distinct `gen_ai_tool_name` label values of mcp_server_operation_duration_seconds; the rest are `other`. */
  maxTools: number;
  /** Findings kept for GET /findings. */
  findingsBuffer: number;
  /** Bytes of JSON GET /findings answers at most: the oldest findings are left out first. */
  findingsMaxBytes: number;
  /**
   * UTF-8 bytes of a session id, request id or service name kept by the detector; a longer one is cut
   * and suffixed with `~` and 16 hex digits of its SHA-256, so that distinct long values stay distinct.
   */
  maxIdBytes: number;
  /** Bytes of findings waiting for stdout; findings past it are dropped and counted. */
  stdoutBufferBytes: number;
  /**
   * Bytes of request bodies (as received and decompressed) held at once across every HTTP request and
   * gRPC message; 429 / RESOURCE_EXHAUSTED above.
   */
  maxInflightBytes: number;
  /** Retry advice (Retry-After, RetryInfo) sent with 429 / RESOURCE_EXHAUSTED and 503. */
  retryAfterMs: number;
  /** Time allowed to send the request headers (HTTP), or to start HTTP/2 on the gRPC port. */
  headerTimeoutMs: number;
  /**
   * Time an HTTP connection may stay silent (mid-body or idle), a gRPC call has to deliver its message,
   * and a gRPC connection without calls stays open.
   */
  idleTimeoutMs: number;
  /** Deepest nesting of arrays and objects accepted in an OTLP/JSON body (400 above), refused at the first bracket too deep. */
  maxJsonDepth: number;
  /** Concurrent connections to the OTLP/HTTP and the OTLP/gRPC port each; further ones are closed at once. */
  maxConnections: number;
  /** Where the detector state is written on shutdown and periodically, and read back on start; undefined: nowhere. */
  stateFile: string | undefined;
  /** How often the state is written to stateFile while serving; 0: only on shutdown. */
  snapshotIntervalMs: number;
  /** On SIGTERM, time given to requests in flight to be answered before the listeners are closed by force. */
  graceMs: number;
  /** Bytes of timeline evidence kept for reported requests (the page draws their timelines from it). */
  evidenceBytes: number;
  /** Bytes of recent spans kept for requests without a finding yet, so that a later finding has its history. */
  evidenceWindowBytes: number;
}

export const DEFAULT_CONFIG: ResumewatchConfig = {
  ...DEFAULT_DETECTOR_OPTIONS,
  host: '127.0.0.1',
  port: 4318,
  grpcPort: 4317,
  metricsPort: 9464,
  allowedHosts: undefined,
  allowedOrigins: undefined,
  token: undefined,
  maxBodyBytes: 8 * 1024 * 1024,
  maxDecompressedBytes: 32 * 1024 * 1024,
  maxServices: DEFAULT_MAX_SERVICES,
  maxTools: DEFAULT_MAX_TOOLS,
  findingsBuffer: 1000,
  findingsMaxBytes: 4 * 1024 * 1024,
  maxIdBytes: DEFAULT_MAX_ID_BYTES,
  stdoutBufferBytes: 1024 * 1024,
  maxInflightBytes: 512 * 1024 * 1024,
  retryAfterMs: 1000,
  headerTimeoutMs: 10_000,
  idleTimeoutMs: 30_000,
  maxJsonDepth: 64,
  maxConnections: 1024,
  stateFile: undefined,
  snapshotIntervalMs: 30_000,
  graceMs: 5_000,
  evidenceBytes: 8 * 1024 * 1024,
  evidenceWindowBytes: 4 * 1024 * 1024,
};

type Kind = 'int' | 'duration' | 'string' | 'port' | 'list';
export type OptionKind = Kind;

/** One row of the configuration table: flag, environment variable, type, meaning. */
export interface OptionSpec {
  key: keyof ResumewatchConfig;
  flag: string;
  env: string;
  kind: Kind;
  help: string;
  /** analyze takes it too, though the detector does not (the HTML report's evidence caps). */
  analyze?: true;
  /** The default in words, when it depends on other options. */
  defaultText?: string;
}

export const OPTION_SPECS: readonly OptionSpec[] = [
  {
    key: 'stormThreshold',
    flag: 'storm-threshold',
    env: 'RESUMEWATCH_STORM_THRESHOLD',
    kind: 'int',
    help: 'attempts within the window that make a reconnect storm',
  },
  {
    key: 'stormWindowMs',
    flag: 'storm-window',
    env: 'RESUMEWATCH_STORM_WINDOW',
    kind: 'duration',
    help: 'storm window; a storm also ends when it passes quietly',
  },
  {
    key: 'settleMs',
    flag: 'settle',
    env: 'RESUMEWATCH_SETTLE',
    kind: 'duration',
    help: 'wait after a storm ends before its signature, for late spans',
  },
  {
    key: 'maxRequests',
    flag: 'max-requests',
    env: 'RESUMEWATCH_MAX_REQUESTS',
    kind: 'int',
    help: 'cap on tracked (service, session, request) states',
  },
  {
    key: 'retentionMs',
    flag: 'retention',
    env: 'RESUMEWATCH_RETENTION',
    kind: 'duration',
    help: 'idle time after which a request state is released',
  },
  {
    key: 'dedupeCapacity',
    flag: 'dedupe',
    env: 'RESUMEWATCH_DEDUPE',
    kind: 'int',
    help: 'span ids remembered to drop redelivered spans',
  },
  {
    key: 'reissueSettleMs',
    flag: 'reissue-settle',
    env: 'RESUMEWATCH_REISSUE_SETTLE',
    kind: 'duration',
    help: "wait after a re-issued request for its first attempt's fate (2026-07-28 era)",
  },
  {
    key: 'maxTasksPerService',
    flag: 'max-tasks',
    env: 'RESUMEWATCH_MAX_TASKS',
    kind: 'int',
    help: 'cap on live MCP task records per service (least recently touched dropped, counted)',
  },
  {
    key: 'taskPollStormThreshold',
    flag: 'task-poll-storm-threshold',
    env: 'RESUMEWATCH_TASK_POLL_STORM_THRESHOLD',
    kind: 'int',
    help: 'polls of one task sooner than half its announced interval, within the window, that make a poll storm',
  },
  {
    key: 'taskPollStormWindowMs',
    flag: 'task-poll-storm-window',
    env: 'RESUMEWATCH_TASK_POLL_STORM_WINDOW',
    kind: 'duration',
    help: 'the window of those early polls',
  },
  {
    key: 'taskPollsAfterGone',
    flag: 'task-polls-after-gone',
    env: 'RESUMEWATCH_TASK_POLLS_AFTER_GONE',
    kind: 'int',
    help: 'polls of a task after the server said it is gone that make a poll storm',
  },
  {
    key: 'sessionLoopThreshold',
    flag: 'session-loop-threshold',
    env: 'RESUMEWATCH_SESSION_LOOP_THRESHOLD',
    kind: 'int',
    help: 'requests on a session id the server refused (404 or 400), with no initialize between, that make a dead_session_loop',
  },
  {
    key: 'sessionLoopWindowMs',
    flag: 'session-loop-window',
    env: 'RESUMEWATCH_SESSION_LOOP_WINDOW',
    kind: 'duration',
    help: 'the window of those refused requests',
  },
  {
    key: 'listeningLoopThreshold',
    flag: 'listening-loop-threshold',
    env: 'RESUMEWATCH_LISTENING_LOOP_THRESHOLD',
    kind: 'int',
    help: 'GET listening streams re-opened after a 405, or after one closed at once with no event, that make a listening_stream_loop',
  },
  {
    key: 'listeningLoopWindowMs',
    flag: 'listening-loop-window',
    env: 'RESUMEWATCH_LISTENING_LOOP_WINDOW',
    kind: 'duration',
    help: 'the window of those re-opens',
  },
  { key: 'host', flag: 'host', env: 'RESUMEWATCH_HOST', kind: 'string', help: 'address every listener binds to' },
  { key: 'port', flag: 'port', env: 'RESUMEWATCH_PORT', kind: 'port', help: 'OTLP/HTTP port (POST /v1/traces)' },
  {
    key: 'grpcPort',
    flag: 'grpc-port',
    env: 'RESUMEWATCH_GRPC_PORT',
    kind: 'port',
    help: 'OTLP/gRPC port; "off" disables it',
  },
  {
    key: 'metricsPort',
    flag: 'metrics-port',
    env: 'RESUMEWATCH_METRICS_PORT',
    kind: 'port',
    help: 'port of the page (/), /metrics, /healthz and /findings',
  },
  {
    key: 'allowedHosts',
    flag: 'allowed-hosts',
    env: 'RESUMEWATCH_ALLOWED_HOSTS',
    kind: 'list',
    help: "names (name or name:port, comma-separated; * any) a request's Host may carry: OTLP receivers, metrics port, gateway; 403 else",
    defaultText: 'loopback names on a loopback --host, any name otherwise',
  },
  {
    key: 'allowedOrigins',
    flag: 'allowed-origins',
    env: 'RESUMEWATCH_ALLOWED_ORIGINS',
    kind: 'list',
    help: 'origins (https://name[:port], comma-separated; * any) a cross-origin request may come from; 403 else',
    defaultText: "an allowed host's, or the request's own",
  },
  {
    key: 'token',
    flag: 'token',
    env: 'RESUMEWATCH_TOKEN',
    kind: 'string',
    help: 'bearer token required by every endpoint but /healthz',
  },
  {
    key: 'maxBodyBytes',
    flag: 'max-body',
    env: 'RESUMEWATCH_MAX_BODY',
    kind: 'int',
    help: 'largest request body in bytes',
  },
  {
    key: 'maxDecompressedBytes',
    flag: 'max-decompressed',
    env: 'RESUMEWATCH_MAX_DECOMPRESSED',
    kind: 'int',
    help: 'largest decompressed body or gRPC message in bytes',
  },
  {
    key: 'maxServices',
    flag: 'max-services',
    env: 'RESUMEWATCH_MAX_SERVICES',
    kind: 'int',
    help: 'distinct service label values before "other"',
  },
  {
    key: 'maxTools',
    flag: 'max-tools',
    env: 'RESUMEWATCH_MAX_TOOLS',
    kind: 'int',
    help: 'distinct tool names (gen_ai_tool_name label of mcp_server_operation_duration_seconds) before "other"',
  },
  {
    key: 'findingsBuffer',
    flag: 'findings-buffer',
    env: 'RESUMEWATCH_FINDINGS_BUFFER',
    kind: 'int',
    help: 'findings kept for GET /findings',
  },
  {
    key: 'findingsMaxBytes',
    flag: 'findings-bytes',
    env: 'RESUMEWATCH_FINDINGS_BYTES',
    kind: 'int',
    help: 'largest GET /findings answer in bytes (oldest findings left out)',
  },
  {
    key: 'maxIdBytes',
    flag: 'max-id-bytes',
    env: 'RESUMEWATCH_MAX_ID_BYTES',
    kind: 'int',
    help: 'longest session id, request id or service name kept; longer ones are cut and hashed',
  },
  {
    key: 'stdoutBufferBytes',
    flag: 'stdout-buffer',
    env: 'RESUMEWATCH_STDOUT_BUFFER',
    kind: 'int',
    help: 'findings bytes waiting for stdout before further ones are dropped (and counted)',
  },
  {
    key: 'maxInflightBytes',
    flag: 'max-inflight',
    env: 'RESUMEWATCH_MAX_INFLIGHT',
    kind: 'int',
    help: 'request body bytes held at once across all requests (429 / RESOURCE_EXHAUSTED above)',
  },
  {
    key: 'retryAfterMs',
    flag: 'retry-after',
    env: 'RESUMEWATCH_RETRY_AFTER',
    kind: 'duration',
    help: 'retry advice sent with 429 / RESOURCE_EXHAUSTED',
  },
  {
    key: 'headerTimeoutMs',
    flag: 'header-timeout',
    env: 'RESUMEWATCH_HEADER_TIMEOUT',
    kind: 'duration',
    help: 'time allowed to send the HTTP request headers, or to start HTTP/2 on the gRPC port',
  },
  {
    key: 'idleTimeoutMs',
    flag: 'idle-timeout',
    env: 'RESUMEWATCH_IDLE_TIMEOUT',
    kind: 'duration',
    help: 'time a request body or a gRPC connection may stay silent',
  },
  {
    key: 'maxJsonDepth',
    flag: 'max-json-depth',
    env: 'RESUMEWATCH_MAX_JSON_DEPTH',
    kind: 'int',
    help: 'deepest nesting accepted in OTLP/JSON (refused at the first bracket too deep)',
  },
  {
    key: 'maxConnections',
    flag: 'max-connections',
    env: 'RESUMEWATCH_MAX_CONNECTIONS',
    kind: 'int',
    help: 'concurrent connections per OTLP port',
  },
  {
    key: 'stateFile',
    flag: 'state-file',
    env: 'RESUMEWATCH_STATE_FILE',
    kind: 'string',
    help: 'detector state written on shutdown and periodically, read back on start',
  },
  {
    key: 'snapshotIntervalMs',
    flag: 'snapshot-interval',
    env: 'RESUMEWATCH_SNAPSHOT_INTERVAL',
    kind: 'duration',
    help: 'how often the state is written to --state-file; 0: only on shutdown',
  },
  {
    key: 'graceMs',
    flag: 'grace',
    env: 'RESUMEWATCH_GRACE',
    kind: 'duration',
    help: 'on SIGTERM, time for requests in flight to be answered',
  },
  {
    key: 'evidenceBytes',
    flag: 'evidence-bytes',
    env: 'RESUMEWATCH_EVIDENCE_BYTES',
    kind: 'int',
    help: 'bytes of timeline evidence kept for reported requests (the page at / and analyze --html draw it)',
    analyze: true,
  },
  {
    key: 'evidenceWindowBytes',
    flag: 'evidence-window-bytes',
    env: 'RESUMEWATCH_EVIDENCE_WINDOW_BYTES',
    kind: 'int',
    help: 'bytes of recent spans kept for requests without a finding yet (their history, should one fire)',
    analyze: true,
  },
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
  if (spec.key === 'grpcPort' && (text === 'off' || text === 'false')) return false;
  const value = parseOptionText(spec.kind, text, source);
  try {
    if (spec.key === 'allowedHosts') checkAllowedHosts(value as string[]);
    if (spec.key === 'allowedOrigins') checkAllowedOrigins(value as string[]);
  } catch (e) {
    throw new ConfigError(`${source}: ${(e as Error).message}`);
  }
  return value;
}

/**
 * An option's text as its kind reads it: a string as it is, a duration in ms, a port (0 to 65535), a
 * positive integer, a comma-separated list (entries trimmed, empty ones dropped). ConfigError names
 * `source` (the flag or the environment variable) on one line.
 */
export function parseOptionText(kind: Kind, text: string, source: string): string | number | string[] {
  switch (kind) {
    case 'string':
      return text;
    case 'list':
      return text
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== '');
    case 'duration':
      try {
        return parseDuration(text);
      } catch (e) {
        throw new ConfigError(`${source}: ${(e as Error).message}`);
      }
    case 'port': {
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
