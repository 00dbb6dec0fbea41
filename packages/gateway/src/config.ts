import { readFileSync } from 'node:fs';
import {
  ConfigError,
  OPTION_SPECS,
  parseOptionText,
  resolveConfig,
  type OptionKind,
  type ResumewatchConfig,
} from '@resumewatch/daemon';
import type { IdPolicy } from '@resumewatch/instrumentation';
import { trustedProxies } from './client-identity.js';
import { GATEWAY_DEFAULTS, type GatewayOptions } from './gateway.js';

type Kind = OptionKind | 'boolean';

/** One row of the gateway's own options: flag, environment variable, type, meaning. */
export interface GatewayOptionSpec {
  key: keyof GatewayCliOptions;
  flag: string;
  env: string;
  kind: Kind;
  help: string;
  default: string;
}

/** What the command line sets of the gateway (the detector's options are `serve`'s). */
interface GatewayCliOptions {
  upstream: string;
  port: number;
  enforce: boolean;
  trustConnectionReuse: boolean;
  cursorProofOnly: boolean;
  maxBodyBytes: number;
  maxHeaderBytes: number;
  maxJsonBodyBytes: number;
  maxHeldEventBytes: number;
  maxHeldBytes: number;
  maxStreams: number;
  maxBatchMessages: number;
  maxConnections: number;
  headerTimeoutMs: number;
  bodyTimeoutMs: number;
  maxSessions: number;
  sessionRetentionMs: number;
  upstreamTimeoutMs: number;
  streamIdleTimeoutMs: number;
  sseHeartbeatMs: number;
  requestTimeoutMs: number;
  upstreamCa: string | undefined;
  idPolicy: string | undefined;
  idKey: string | undefined;
  serviceName: string | undefined;
  trustedProxies: string[] | undefined;
}

export const GATEWAY_OPTION_SPECS: readonly GatewayOptionSpec[] = [
  {
    key: 'upstream',
    flag: 'upstream',
    env: 'RESUMEWATCH_UPSTREAM',
    kind: 'string',
    help: "the MCP server: requests go to its origin with the client's path (required)",
    default: 'none',
  },
  {
    key: 'port',
    flag: 'port',
    env: 'RESUMEWATCH_GATEWAY_PORT',
    kind: 'port',
    help: 'port clients connect to',
    default: String(GATEWAY_DEFAULTS.port),
  },
  {
    key: 'enforce',
    flag: 'enforce',
    env: 'RESUMEWATCH_ENFORCE',
    kind: 'boolean',
    help: "refuse resumes of delivered requests (405) and drop replays of delivered terminals, on the client's proof of receipt",
    default: 'off',
  },
  {
    key: 'trustConnectionReuse',
    flag: 'trust-connection-reuse',
    env: 'RESUMEWATCH_GATEWAY_TRUST_CONNECTION_REUSE',
    kind: 'boolean',
    help: "with --enforce, take a client's next request on a connection as proof it read the response before, besides its cursor: only when every client connects to the gateway directly, with no load balancer, proxy, ingress or sidecar that pools connections between them",
    default: 'off',
  },
  {
    key: 'cursorProofOnly',
    flag: 'cursor-proof-only',
    env: 'RESUMEWATCH_GATEWAY_CURSOR_PROOF_ONLY',
    kind: 'boolean',
    help: 'the earlier, opposite spelling of --trust-connection-reuse (cursor proof only is the default now); not with it',
    default: 'off',
  },
  {
    key: 'maxBodyBytes',
    flag: 'max-body',
    env: 'RESUMEWATCH_GATEWAY_MAX_BODY',
    kind: 'int',
    help: 'largest request body in bytes (413 above)',
    default: String(GATEWAY_DEFAULTS.maxBodyBytes),
  },
  {
    key: 'maxHeaderBytes',
    flag: 'max-header-bytes',
    env: 'RESUMEWATCH_GATEWAY_MAX_HEADER_BYTES',
    kind: 'int',
    help: 'largest request header block in bytes (431 above)',
    default: String(GATEWAY_DEFAULTS.maxHeaderBytes),
  },
  {
    key: 'maxJsonBodyBytes',
    flag: 'max-json-body-bytes',
    env: 'RESUMEWATCH_GATEWAY_MAX_JSON_BODY_BYTES',
    kind: 'int',
    help: 'largest JSON response body parsed; a larger one passes to the client unparsed',
    default: String(GATEWAY_DEFAULTS.maxJsonBodyBytes),
  },
  {
    key: 'maxHeldEventBytes',
    flag: 'max-held-event-bytes',
    env: 'RESUMEWATCH_GATEWAY_MAX_HELD_EVENT_BYTES',
    kind: 'int',
    help: 'largest SSE event held to parse (and, with --enforce, filter) it; a larger one passes as it arrives, unparsed',
    default: String(GATEWAY_DEFAULTS.maxHeldEventBytes),
  },
  {
    key: 'maxHeldBytes',
    flag: 'max-held-bytes',
    env: 'RESUMEWATCH_GATEWAY_MAX_HELD_BYTES',
    kind: 'int',
    help: 'bytes held at once, across exchanges, to parse JSON bodies and SSE events; beyond, they pass unparsed',
    default: String(GATEWAY_DEFAULTS.maxHeldBytes),
  },
  {
    key: 'maxStreams',
    flag: 'max-streams',
    env: 'RESUMEWATCH_GATEWAY_MAX_STREAMS',
    kind: 'int',
    help: 'exchanges open at once, streams included (503 above)',
    default: String(GATEWAY_DEFAULTS.maxStreams),
  },
  {
    key: 'maxBatchMessages',
    flag: 'max-batch-messages',
    env: 'RESUMEWATCH_GATEWAY_MAX_BATCH_MESSAGES',
    kind: 'int',
    help: 'JSON-RPC messages of a request body observed; a larger batch is forwarded unobserved, its response too (counted)',
    default: String(GATEWAY_DEFAULTS.maxBatchMessages),
  },
  {
    key: 'maxConnections',
    flag: 'max-connections',
    env: 'RESUMEWATCH_GATEWAY_MAX_CONNECTIONS',
    kind: 'int',
    help: 'client connections open at once (one more is closed unanswered)',
    default: String(GATEWAY_DEFAULTS.maxConnections),
  },
  {
    key: 'headerTimeoutMs',
    flag: 'header-timeout',
    env: 'RESUMEWATCH_GATEWAY_HEADER_TIMEOUT',
    kind: 'duration',
    help: 'time a client has to send its request headers (408 after); 0: never',
    default: '10s',
  },
  {
    key: 'bodyTimeoutMs',
    flag: 'body-timeout',
    env: 'RESUMEWATCH_GATEWAY_BODY_TIMEOUT',
    kind: 'duration',
    help: 'time a client has to send its whole request body (408 after); 0: never',
    default: '1m',
  },
  {
    key: 'maxSessions',
    flag: 'max-sessions',
    env: 'RESUMEWATCH_GATEWAY_MAX_SESSIONS',
    kind: 'int',
    help: 'sessions observed at once (least recently used forgotten first)',
    default: '10000',
  },
  {
    key: 'sessionRetentionMs',
    flag: 'session-retention',
    env: 'RESUMEWATCH_GATEWAY_SESSION_RETENTION',
    kind: 'duration',
    help: 'a session with no exchange this long is no longer observed (a DELETE ends it at once)',
    default: '1h',
  },
  {
    key: 'upstreamTimeoutMs',
    flag: 'upstream-timeout',
    env: 'RESUMEWATCH_UPSTREAM_TIMEOUT',
    kind: 'duration',
    help: 'time the upstream has to send response headers (504 after)',
    default: '5m',
  },
  {
    key: 'streamIdleTimeoutMs',
    flag: 'stream-idle-timeout',
    env: 'RESUMEWATCH_STREAM_IDLE_TIMEOUT',
    kind: 'duration',
    help: 'an exchange silent both ways this long (up to a quarter longer) is closed; 0: never',
    default: '10m',
  },
  {
    key: 'sseHeartbeatMs',
    flag: 'sse-heartbeat',
    env: 'RESUMEWATCH_GATEWAY_SSE_HEARTBEAT',
    kind: 'duration',
    help: "an SSE stream nothing was written to for this long gets a comment line between its events, so that an idle timeout on the way (a load balancer's) does not cut it; 0: off",
    default: 'off',
  },
  {
    key: 'requestTimeoutMs',
    flag: 'request-timeout',
    env: 'RESUMEWATCH_REQUEST_TIMEOUT',
    kind: 'duration',
    help: "a request's deadline for its spans and for verdicts on silence",
    default: '5m',
  },
  {
    key: 'upstreamCa',
    flag: 'upstream-ca',
    env: 'RESUMEWATCH_UPSTREAM_CA',
    kind: 'string',
    help: "PEM file of CAs trusted for an https upstream, besides Node's",
    default: 'none',
  },
  {
    key: 'idPolicy',
    flag: 'id-policy',
    env: 'RESUMEWATCH_ID_POLICY',
    kind: 'string',
    help: 'session and event ids on spans and findings: raw, hmac or omit',
    default: 'raw',
  },
  {
    key: 'idKey',
    flag: 'id-key',
    env: 'RESUMEWATCH_ID_KEY',
    kind: 'string',
    help: 'HMAC key for --id-policy hmac (16 bytes or more)',
    default: 'none',
  },
  {
    key: 'trustedProxies',
    flag: 'trusted-proxies',
    env: 'RESUMEWATCH_GATEWAY_TRUSTED_PROXIES',
    kind: 'list',
    help: 'load balancers (addresses, address/prefix) whose X-Forwarded-For names the client',
    default: 'none',
  },
  {
    key: 'serviceName',
    flag: 'service-name',
    env: 'OTEL_SERVICE_NAME',
    kind: 'string',
    help: "service.name of the gateway's spans",
    default: 'resumewatch-gateway',
  },
];

/** serve's options that the gateway's built-in detector and its /metrics listener take too. */
const SHARED_KEYS = new Set<keyof ResumewatchConfig>([
  'stormThreshold',
  'stormWindowMs',
  'settleMs',
  'maxRequests',
  'retentionMs',
  'dedupeCapacity',
  // A gateway sees 2026-07-28 re-issues too, and how long a long tool may run decides when one is reported.
  'reissueSettleMs',
  // The tasks family's cap and poll-storm thresholds: a gateway sees every task's creation and polls.
  'maxTasksPerService',
  'taskPollStormThreshold',
  'taskPollStormWindowMs',
  'taskPollsAfterGone',
  // The loops family's thresholds: a gateway sees every refused session and every GET.
  'sessionLoopThreshold',
  'sessionLoopWindowMs',
  'listeningLoopThreshold',
  'listeningLoopWindowMs',
  'host',
  'metricsPort',
  // One list for both listeners: the names the machine is reached under.
  'allowedHosts',
  'allowedOrigins',
  'token',
  'maxServices',
  'maxTools',
  'findingsBuffer',
  'findingsMaxBytes',
  'maxIdBytes',
  'stdoutBufferBytes',
  'evidenceBytes',
  'evidenceWindowBytes',
  // The built-in detector's state across a restart, serve's file by serve's schema (daemon's state-file.ts),
  // with the wire observer's section beside it (observation-state.ts).
  'stateFile',
  'snapshotIntervalMs',
]);
export const SHARED_OPTION_SPECS = OPTION_SPECS.filter((s) => SHARED_KEYS.has(s.key));

/** parseArgs option definitions of every gateway flag. */
export function gatewayArgs(): Record<string, { type: 'string' | 'boolean' }> {
  const out: Record<string, { type: 'string' | 'boolean' }> = {};
  for (const s of SHARED_OPTION_SPECS) out[s.flag] = { type: 'string' };
  for (const s of GATEWAY_OPTION_SPECS) out[s.flag] = { type: s.kind === 'boolean' ? 'boolean' : 'string' };
  return out;
}

function parseValue(spec: GatewayOptionSpec, text: string, source: string): unknown {
  if (spec.kind !== 'boolean') return parseOptionText(spec.kind, text, source);
  if (/^(1|true|yes|on)$/i.test(text)) return true;
  if (/^(0|false|no|off)?$/i.test(text)) return false;
  throw new ConfigError(`${source}: not a boolean: "${text}" (use true or false)`);
}

/** Defaults, then environment, then flags; the gateway's options and its detector's configuration. */
export function resolveGatewayConfig(
  flags: Record<string, unknown>,
  env: NodeJS.ProcessEnv = process.env,
): { gateway: GatewayOptions; detector: ResumewatchConfig } {
  const shared: Record<string, unknown> = {};
  for (const s of SHARED_OPTION_SPECS) if (flags[s.flag] !== undefined) shared[s.flag] = flags[s.flag];
  const detector = resolveConfig(shared, env);
  const values: Record<string, unknown> = {};
  for (const spec of GATEWAY_OPTION_SPECS) {
    const e = env[spec.env];
    if (e !== undefined && e !== '') values[spec.key] = parseValue(spec, e, spec.env);
    const f = flags[spec.flag];
    if (typeof f === 'string') values[spec.key] = parseValue(spec, f, `--${spec.flag}`);
    if (f === true) values[spec.key] = true;
  }
  const upstream = values.upstream as string | undefined;
  if (upstream === undefined)
    throw new ConfigError('--upstream is required: the URL of the MCP server to put the gateway in front of');
  let url: URL;
  try {
    url = new URL(upstream);
  } catch {
    throw new ConfigError(`--upstream: not a URL: "${upstream}" (e.g. http://127.0.0.1:3001/mcp)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(`--upstream: use an http:// or https:// URL, got "${url.protocol}"`);
  const policy = values.idPolicy as string | undefined;
  if (policy !== undefined && policy !== 'raw' && policy !== 'hmac' && policy !== 'omit')
    throw new ConfigError(`--id-policy: one of raw, hmac, omit; got "${policy}"`);
  const connectionProof = trustConnectionReuse(values);
  const proxies = values.trustedProxies as string[] | undefined;
  if (proxies !== undefined) {
    try {
      trustedProxies(proxies);
    } catch (e) {
      throw new ConfigError(`--trusted-proxies: ${(e as Error).message}`);
    }
  }
  let ca: string | undefined;
  if (values.upstreamCa !== undefined) {
    try {
      ca = readFileSync(values.upstreamCa as string, 'utf8');
    } catch (e) {
      throw new ConfigError(
        `--upstream-ca: cannot read ${String(values.upstreamCa)}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
  }
  const gateway: GatewayOptions = {
    upstream: url,
    host: detector.host,
    ...(detector.allowedHosts !== undefined ? { allowedHosts: detector.allowedHosts } : {}),
    ...(detector.allowedOrigins !== undefined ? { allowedOrigins: detector.allowedOrigins } : {}),
    port: (values.port as number | undefined) ?? GATEWAY_DEFAULTS.port,
    enforce: (values.enforce as boolean | undefined) ?? false,
    connectionProof,
    maxBodyBytes: (values.maxBodyBytes as number | undefined) ?? GATEWAY_DEFAULTS.maxBodyBytes,
    maxHeaderBytes: (values.maxHeaderBytes as number | undefined) ?? GATEWAY_DEFAULTS.maxHeaderBytes,
    maxJsonBodyBytes: (values.maxJsonBodyBytes as number | undefined) ?? GATEWAY_DEFAULTS.maxJsonBodyBytes,
    maxHeldEventBytes: (values.maxHeldEventBytes as number | undefined) ?? GATEWAY_DEFAULTS.maxHeldEventBytes,
    maxHeldBytes: (values.maxHeldBytes as number | undefined) ?? GATEWAY_DEFAULTS.maxHeldBytes,
    maxStreams: (values.maxStreams as number | undefined) ?? GATEWAY_DEFAULTS.maxStreams,
    maxBatchMessages: (values.maxBatchMessages as number | undefined) ?? GATEWAY_DEFAULTS.maxBatchMessages,
    maxConnections: (values.maxConnections as number | undefined) ?? GATEWAY_DEFAULTS.maxConnections,
    headerTimeoutMs: (values.headerTimeoutMs as number | undefined) ?? GATEWAY_DEFAULTS.headerTimeoutMs,
    bodyTimeoutMs: (values.bodyTimeoutMs as number | undefined) ?? GATEWAY_DEFAULTS.bodyTimeoutMs,
    upstreamTimeoutMs: (values.upstreamTimeoutMs as number | undefined) ?? GATEWAY_DEFAULTS.upstreamTimeoutMs,
    streamIdleTimeoutMs: (values.streamIdleTimeoutMs as number | undefined) ?? GATEWAY_DEFAULTS.streamIdleTimeoutMs,
    sseHeartbeatMs: (values.sseHeartbeatMs as number | undefined) ?? GATEWAY_DEFAULTS.sseHeartbeatMs,
    requestTimeoutMs: (values.requestTimeoutMs as number | undefined) ?? GATEWAY_DEFAULTS.requestTimeoutMs,
    ...(values.maxSessions !== undefined ? { maxSessions: values.maxSessions as number } : {}),
    ...(values.sessionRetentionMs !== undefined ? { sessionRetentionMs: values.sessionRetentionMs as number } : {}),
    ...(ca !== undefined ? { upstreamCa: ca } : {}),
    ...(policy !== undefined ? { idPolicy: policy as IdPolicy } : {}),
    ...(values.idKey !== undefined ? { idKey: values.idKey as string } : {}),
    ...(values.serviceName !== undefined ? { serviceName: values.serviceName as string } : {}),
    ...(proxies !== undefined && proxies.length > 0 ? { trustedProxies: proxies } : {}),
  };
  return { gateway, detector };
}

/**
 * Whether a connection's next request proves receipt (--trust-connection-reuse; off by default: a
 * connection-pooling hop between clients and the gateway sends one client's request on a connection that
 * carried another's response, and may mark neither). `--cursor-proof-only`, the option's earlier and
 * opposite spelling, still works alone; the two together are refused rather than one silently winning.
 */
function trustConnectionReuse(values: Record<string, unknown>): boolean {
  const trust = values.trustConnectionReuse as boolean | undefined;
  const cursorOnly = values.cursorProofOnly as boolean | undefined;
  if (trust !== undefined && cursorOnly !== undefined)
    throw new ConfigError(
      '--trust-connection-reuse and --cursor-proof-only (its earlier, opposite spelling) are both set: keep only --trust-connection-reuse',
    );
  return trust ?? (cursorOnly === undefined ? false : !cursorOnly);
}
