import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  hostCheck,
  startEmbeddedDetector,
  type EmbeddedDetector,
  type EmbeddedDetectorOptions,
} from '@resumewatch/daemon';
import type { GuardOptions, IdPolicyOptions } from '@resumewatch/instrumentation';
import { GuardAction, GuardProof } from '@resumewatch/semconv';
import { capConnections, listenerOptions } from './connection-limits.js';
import { ClientIdentities } from './client-identity.js';
import { refuseAtConnection } from './connection-refusals.js';
import { GatewayCounts } from './counts.js';
import { Forwarder, type ForwarderLimits } from './forward.js';
import { observeExchanges, type ObservationStats } from './observation.js';
import { OBSERVATION_SECTION, observationState } from './observation-state.js';
import { TaskHandles } from './task-handles.js';
import { gatewayTracing, type GatewayTracing } from './tracing.js';
import { UpstreamClient } from './upstream.js';

export interface GatewayOptions extends Partial<ForwarderLimits>, IdPolicyOptions {
  /** The MCP server's URL; every request goes to its origin, with the client's path. */
  upstream: string | URL;
  /** Address the proxy listens on. Default 127.0.0.1. */
  host?: string;
  /**
   * Names a request's `Host` may carry (`name` or `name:port`; `*`: any), 403 else. Default: loopback
   * names (`localhost`, `127.0.0.1`, `[::1]`) when `host` is a loopback address, any name otherwise.
   * The built-in detector's listener takes its own (`detector.config.allowedHosts`).
   */
  allowedHosts?: readonly string[];
  /**
   * Origins (`https://name[:port]`; `*`: any) a request with another origin than its own may come
   * from, 403 else. Default: those naming an allowed host (with no --allowed-hosts off loopback: none).
   */
  allowedOrigins?: readonly string[];
  /**
   * Addresses (or `address/prefix` ranges) of the load balancers in front of the gateway whose
   * `X-Forwarded-For` it believes: behind one, a client is the address the balancer put last there, not
   * the balancer's own (client-identity.ts). Default none: the peer is the client.
   */
  trustedProxies?: readonly string[];
  /** Port of the proxy; 0 picks a free one. Default 8080. */
  port?: number;
  /** Enforce the guard's rules on the server's side of the wire. Default false: observe only. */
  enforce?: boolean;
  /**
   * Whether a client's next request on a connection may prove it read the response before it (with
   * `enforce`; `--trust-connection-reuse`). Default false: only the client's cursor proves receipt. Turn
   * it on only when clients connect to the gateway directly: a hop that pools connections (haproxy, whose
   * `http-reuse safe` is its default, nginx with upstream `keepalive`, Envoy, an ingress, a sidecar)
   * sends one client's request on a connection that carried another client's response, and may mark
   * neither with Via, Forwarded or X-Forwarded-For. A request that bears one of those never proves.
   */
  connectionProof?: boolean;
  /** Largest request header block in bytes (431 above). Default 16 KiB. */
  maxHeaderBytes?: number;
  /** Time a client has to send its request headers (408 after, connection closed); 0: no limit. Default 10 s. */
  headerTimeoutMs?: number;
  /** Client connections open at once; one more is closed as it is accepted. Default 12,000. */
  maxConnections?: number;
  /** Largest JSON response body parsed; a larger one passes to the client unparsed. Default 8 MiB. */
  maxJsonBodyBytes?: number;
  /**
   * Largest SSE event held to parse it (and, with `enforce`, to filter it); a larger one passes to the
   * client as it arrives, unparsed. Default 8 MiB.
   */
  maxHeldEventBytes?: number;
  /** Most bytes held at once, across exchanges, to parse JSON bodies and SSE events. Default 64 MiB. */
  maxHeldBytes?: number;
  /** PEM certificates trusted for an https upstream, in addition to Node's. */
  upstreamCa?: string;
  /** A request's deadline for its spans (and the guard's verdicts on silence). Default 300000 ms. */
  requestTimeoutMs?: number;
  /** Sessions observed at once; the least recently used goes first. Default 10,000. */
  maxSessions?: number;
  /** How long a session with no exchange stays observed (a DELETE ends it at once). Default 1 h. */
  sessionRetentionMs?: number;
  /** The built-in detector and its /metrics listener (`config.host`, `config.metricsPort`), or false for none. */
  detector?: EmbeddedDetectorOptions | false;
  /**
   * More span processors for the gateway's spans, besides the built-in detector and the OTLP exporter
   * that OTEL_EXPORTER_OTLP_ENDPOINT (or the traces endpoint) turns on.
   */
  spanProcessors?: readonly SpanProcessor[];
  /** service.name of the gateway's spans. Default OTEL_SERVICE_NAME, else `resumewatch-gateway`. */
  serviceName?: string;
}

export interface RunningGateway {
  /** The proxy's base URL: the upstream's path appended is the MCP endpoint clients use. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly upstream: URL;
  readonly enforce: boolean;
  /** The built-in detector (undefined with `detector: false`). */
  readonly detector: EmbeddedDetector | undefined;
  /** What the gateway counted: open exchanges, refusals by reason, enforced actions. */
  counts(): ReturnType<GatewayCounts['snapshot']>;
  /** Per-session state of the observation (sessions, open requests and resumes). */
  stats(): ObservationStats;
  /** Ends every span still open and hands it to the detector and the exporter. */
  flush(): Promise<void>;
  /** Stops accepting, closes every connection, flushes the spans, stops the detector. */
  close(): Promise<void>;
}

export const GATEWAY_DEFAULTS = {
  host: '127.0.0.1',
  port: 8080,
  maxBodyBytes: 4 * 1024 * 1024,
  maxHeaderBytes: 16 * 1024,
  maxJsonBodyBytes: 8 * 1024 * 1024,
  maxHeldEventBytes: 8 * 1024 * 1024,
  maxHeldBytes: 64 * 1024 * 1024,
  maxStreams: 10_000,
  // JSON-RPC messages of a request body the gateway observes: a real client's batch is a handful.
  maxBatchMessages: 100,
  // --max-streams, and room for connections sending their request or idle between two.
  maxConnections: 12_000,
  headerTimeoutMs: 10_000,
  bodyTimeoutMs: 60_000,
  upstreamTimeoutMs: 300_000,
  streamIdleTimeoutMs: 600_000,
  // --sse-heartbeat: off.
  sseHeartbeatMs: 0,
  requestTimeoutMs: 300_000,
  sessionRetentionMs: 3_600_000,
} as const;

/** Starts the gateway: the proxy on `host:port`, the built-in detector's /metrics on its own port. */
export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const upstream = new URL(options.upstream);
  if (upstream.protocol !== 'http:' && upstream.protocol !== 'https:')
    throw new TypeError(`upstream must be an http or https URL, got ${upstream.protocol}`);
  const enforce = options.enforce ?? false;
  const sessionRetentionMs = options.sessionRetentionMs ?? GATEWAY_DEFAULTS.sessionRetentionMs;
  const counts = new GatewayCounts();
  const host = options.host ?? GATEWAY_DEFAULTS.host;
  // Built first: a bad entry fails the start before anything listens.
  const hosts = hostCheck({
    bindHost: host,
    allowedHosts: options.allowedHosts,
    allowedOrigins: options.allowedOrigins,
  });
  const clients = new ClientIdentities(options.trustedProxies);
  const detector = options.detector === false ? undefined : await startEmbeddedDetector(options.detector ?? {});
  if (detector) counts.register(detector.metrics);
  let tracing: GatewayTracing | undefined;
  let server: Server | undefined;
  const client = new UpstreamClient({ ca: options.upstreamCa, lateError: () => counts.lateUpstreamError() });
  try {
    tracing = gatewayTracing({
      detector,
      spanProcessors: options.spanProcessors,
      serviceName: options.serviceName,
    });
    const guard: GuardOptions | undefined = enforce
      ? {
          // Each action counted with the proof of receipt it rests on (a report withholds nothing: none).
          onResumeRefused: (report) => counts.guardAction(GuardAction.RESUME_REFUSED, report.proof),
          onDuplicateTerminalDropped: (report) =>
            counts.guardAction(GuardAction.DUPLICATE_TERMINAL_DROPPED, report.proof),
          onConflictingTerminal: (report) =>
            counts.guardAction(GuardAction.CONFLICTING_TERMINAL_REPORTED, report.proof),
          onFailedResumption: () => counts.guardAction(GuardAction.RESUMPTION_FAILED_REPORTED, GuardProof.NONE),
          // A gateway has no application to tell of a re-issue; its spans show the re-issue link.
          reissues: false,
        }
      : undefined;
    const observation = observeExchanges({
      tracerProvider: tracing.provider,
      requestTimeoutMs: options.requestTimeoutMs ?? GATEWAY_DEFAULTS.requestTimeoutMs,
      ...(guard ? { guard } : {}),
      ...(options.idPolicy ? { idPolicy: options.idPolicy } : {}),
      ...(options.idKey ? { idKey: options.idKey } : {}),
      ...(options.maxSessions ? { maxSessions: options.maxSessions } : {}),
      sessionRetentionMs,
      connectionProof: options.connectionProof ?? false,
      maxJsonBodyBytes: options.maxJsonBodyBytes ?? GATEWAY_DEFAULTS.maxJsonBodyBytes,
      maxHeldEventBytes: options.maxHeldEventBytes ?? GATEWAY_DEFAULTS.maxHeldEventBytes,
      maxHeldBytes: options.maxHeldBytes ?? GATEWAY_DEFAULTS.maxHeldBytes,
      // A body whose observation threw stood aside (passed through unobserved): counted and logged.
      onObservationFailure: (error) => counts.observationFailed(error),
    });
    counts.observe(observation);
    // One task per idempotency key (--enforce): learnt from the answers the observer reads.
    const taskHandles = enforce ? new TaskHandles() : undefined;
    if (taskHandles) {
      observation.observer.addListener(taskHandles.listener);
      counts.repeatsFrom(taskHandles);
    }
    // With --state-file, the observation's state is kept beside the detector's: read back now, before
    // anything listens, and written with every snapshot.
    const kept = detector?.config.stateFile ? observationState(observation, upstream) : undefined;
    if (kept) detector!.keepSection(OBSERVATION_SECTION, kept);
    const forwarder = new Forwarder(
      upstream,
      observation,
      client,
      {
        maxBodyBytes: options.maxBodyBytes ?? GATEWAY_DEFAULTS.maxBodyBytes,
        bodyTimeoutMs: options.bodyTimeoutMs ?? GATEWAY_DEFAULTS.bodyTimeoutMs,
        maxStreams: options.maxStreams ?? GATEWAY_DEFAULTS.maxStreams,
        upstreamTimeoutMs: options.upstreamTimeoutMs ?? GATEWAY_DEFAULTS.upstreamTimeoutMs,
        streamIdleTimeoutMs: options.streamIdleTimeoutMs ?? GATEWAY_DEFAULTS.streamIdleTimeoutMs,
        maxBatchMessages: options.maxBatchMessages ?? GATEWAY_DEFAULTS.maxBatchMessages,
        sseHeartbeatMs: options.sseHeartbeatMs ?? GATEWAY_DEFAULTS.sseHeartbeatMs,
      },
      counts,
      enforce,
      hosts,
      clients,
      options.connectionProof ?? false,
      taskHandles,
    );
    const connections = {
      maxHeaderBytes: options.maxHeaderBytes ?? GATEWAY_DEFAULTS.maxHeaderBytes,
      headerTimeoutMs: options.headerTimeoutMs ?? GATEWAY_DEFAULTS.headerTimeoutMs,
      maxConnections: options.maxConnections ?? GATEWAY_DEFAULTS.maxConnections,
    };
    server = createServer(listenerOptions(connections), (req, res) => forwarder.handle(req, res));
    capConnections(server, connections, counts);
    refuseAtConnection(server, counts);
    const port = await listen(server, host, options.port ?? GATEWAY_DEFAULTS.port);
    // Sessions whose clients went away without a DELETE leave at their retention, not only when new ones come.
    const pruning = setInterval(() => observation.prune(), Math.min(60_000, sessionRetentionMs));
    pruning.unref();
    const running = server;
    const spans = tracing;
    let closing: Promise<void> | undefined;
    return {
      url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
      host,
      port,
      upstream,
      enforce,
      detector,
      counts: () => counts.snapshot(),
      stats: () => observation.stats(),
      flush: () => spans.flush(),
      close: () =>
        (closing ??= (async () => {
          clearInterval(pruning);
          // What the last snapshot keeps is the observation as it stands now: closing the connections
          // next ends every open stream and request span as a client's abort, which it was not.
          kept?.freeze();
          await new Promise<void>((resolve) => {
            running.close(() => resolve());
            running.closeAllConnections();
          });
          client.close();
          await spans.shutdown();
          await detector?.close();
        })()),
    };
  } catch (e) {
    server?.close();
    client.close();
    await tracing?.shutdown();
    await detector?.close();
    throw e;
  }
}

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
