import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import { createServer as createH2Server, type Http2Server, type ServerHttp2Session } from 'node:http2';
import type { ResumewatchConfig } from '../config.js';
import {
  OtlpDecodeError,
  decodeProtobufRequest,
  encodeProtobufResponse,
  rejectionMessage,
} from '@resumewatch/detector';
import { hostCheck } from '../host-policy.js';
import type { InflightRequests } from './drain.js';
import { startCall, type CallDoor } from './grpc-call.js';
import { GrpcCode, sendMessage, sendStatus } from './grpc-reply.js';
import type { InflightBudget } from './inflight.js';
import type { Pipeline } from './pipeline.js';

/** Concurrent calls on one connection: with --max-connections, what bounds the calls being received at once. */
const MAX_STREAMS_PER_CONNECTION = 16;
/** HTTP/2 flow-control window of a call, and the largest DATA frame a client may send. */
const CALL_WINDOW_BYTES = 1024 * 1024;
/** HTTP/2 flow-control window of a connection: its 16 calls at once. */
const CONNECTION_WINDOW_BYTES = MAX_STREAMS_PER_CONNECTION * CALL_WINDOW_BYTES;

export interface GrpcReceiverInit {
  pipeline: Pipeline;
  config: ResumewatchConfig;
  budget: InflightBudget;
  inflight: InflightRequests;
  shed: () => void;
}

export interface GrpcReceiver {
  port: number;
  server: Http2Server;
  /** Stops accepting connections and closes the open ones once their calls are answered (forced after graceMs). */
  close(graceMs: number): Promise<void>;
}

/**
 * Starts the OTLP/gRPC receiver: one unary method, TraceService/Export, on node:http2 in cleartext (h2c
 * with prior knowledge, as OTLP exporters connect to an http:// endpoint). grpc-call.ts reads and
 * refuses each call; here connections are accepted by our own listener, so that their number is capped
 * (--max-connections) and one that never starts HTTP/2 is closed (--header-timeout), and a connection
 * without calls is closed after --idle-timeout.
 */
export async function startGrpcReceiver(init: GrpcReceiverInit, port: number): Promise<GrpcReceiver> {
  const { pipeline, config, inflight } = init;
  // The gRPC door feeds nothing but the detector and the evidence: only the attributes they read are
  // converted, and a span that cannot matter to them is counted and skipped.
  const detectorOnly = { detectorAttributesOnly: true, onSkipped: pipeline.skipped } as const;
  const door: CallDoor = {
    config,
    budget: init.budget,
    shed: init.shed,
    // The listeners' Host check (host-policy.ts) on the call's :authority (else `host`). No browser speaks
    // cleartext HTTP/2 to this port, so DNS rebinding cannot reach it; the check keeps one policy for
    // every listener of the --host.
    hosts: hostCheck({
      bindHost: config.host,
      allowedHosts: config.allowedHosts,
      allowedOrigins: config.allowedOrigins,
    }),
    handle: (stream, message) => {
      inflight.enter();
      try {
        const result = pipeline.ingest((sink) => decodeProtobufRequest(message, sink, detectorOnly));
        sendMessage(stream, encodeProtobufResponse(result.invalid, rejectionMessage(result)));
      } catch (e) {
        if (e instanceof OtlpDecodeError) sendStatus(stream, GrpcCode.INVALID_ARGUMENT, e.message);
        else sendStatus(stream, GrpcCode.INTERNAL, `internal error: ${(e as Error).message}`);
      } finally {
        inflight.leave();
      }
    },
  };
  const server = createH2Server({
    // A message comes in few large DATA frames rather than many of 16 KiB, each with its own trip through
    // nghttp2, node:http2 and the stream's 'data': the window and the frame size let a client send up to
    // 1 MiB of a call at once. It is read as it comes (never paused), into the call's own buffer.
    settings: {
      maxConcurrentStreams: MAX_STREAMS_PER_CONNECTION,
      initialWindowSize: CALL_WINDOW_BYTES,
      maxFrameSize: CALL_WINDOW_BYTES,
    },
    // As grpc-js set it: Node's session memory check degrades badly when reached; what a session holds
    // is bounded by its 16 streams, their flow-control windows and --max-decompressed per call.
    maxSessionMemory: Number.MAX_SAFE_INTEGER,
  });
  server.on('stream', (stream, headers) => startCall(door, stream, headers));
  const sessions = new Set<ServerHttp2Session>();
  let closing: (() => void) | undefined;
  server.on('session', (session) => {
    sessions.add(session);
    session.on('error', () => undefined);
    session.setLocalWindowSize(CONNECTION_WINDOW_BYTES);
    closeWhenIdle(session, config.idleTimeoutMs);
    session.once('close', () => {
      sessions.delete(session);
      closing?.();
    });
    if (closing) session.close();
  });
  const listener: NetServer = createNetServer((socket) => {
    // A connection that has not started HTTP/2 within --header-timeout is closed; once it has, its calls
    // have --idle-timeout to deliver their message, and it closes after --idle-timeout without calls.
    socket.setTimeout(config.headerTimeoutMs, () => (socket.bytesRead === 0 ? socket.destroy() : socket.setTimeout(0)));
    server.emit('connection', socket);
  });
  listener.maxConnections = config.maxConnections;
  const bound = await new Promise<number>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(port, config.host, () => {
      listener.off('error', reject);
      resolve((listener.address() as { port: number }).port);
    });
  });
  return {
    port: bound,
    server,
    close: (graceMs) =>
      new Promise<void>((resolve) => {
        listener.close();
        // GOAWAY to every connection: its open calls are answered, then it closes; forced after graceMs.
        const force = setTimeout(() => {
          for (const session of sessions) session.destroy();
          resolve();
        }, graceMs);
        force.unref();
        closing = () => {
          if (sessions.size > 0) return;
          clearTimeout(force);
          resolve();
        };
        for (const session of sessions) session.close();
        closing();
      }),
  };
}

/**
 * Closes a connection once it has had no call for `idleMs` (grpc-js's max_connection_idle_ms). One
 * timer a connection, armed for what is left of the idle time when it fires, rather than one set and
 * cleared per call: the connection closes `idleMs` after its last call ended, not up to twice that.
 */
function closeWhenIdle(session: ServerHttp2Session, idleMs: number): void {
  let open = 0;
  let idleSince = performance.now();
  session.on('stream', (stream) => {
    open++;
    stream.once('close', () => {
      if (--open === 0) idleSince = performance.now();
    });
  });
  let timer: NodeJS.Timeout;
  const arm = (ms: number): void => {
    timer = setTimeout(check, ms);
    timer.unref();
  };
  const check = (): void => {
    if (session.closed || session.destroyed) return;
    const idle = open === 0 ? performance.now() - idleSince : 0;
    if (idle >= idleMs) return void session.close();
    arm(idleMs - idle);
  };
  arm(idleMs);
  session.once('close', () => clearTimeout(timer));
}
