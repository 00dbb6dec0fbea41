import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type { ResumewatchConfig } from '../config.js';
import {
  OtlpDecodeError,
  decodeProtobufRequest,
  encodeProtobufResponse,
  rejectionMessage,
} from '@resumewatch/detector';
import { hostCheck } from '../host-policy.js';
import { authorized } from './auth.js';
import type { InflightRequests } from './drain.js';
import type { InflightBudget } from './inflight.js';
import type { Pipeline } from './pipeline.js';
import { RpcCode, encodeStatus, retryInfo } from './status.js';

const EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';
/** Where gRPC carries a google.rpc.Status with details (here RetryInfo), as OTLP exporters read it. */
const STATUS_DETAILS_KEY = 'grpc-status-details-bin';
/** Concurrent calls on one connection: with --max-connections, what bounds the calls being received at once. */
const MAX_STREAMS_PER_CONNECTION = 16;

/** The request stays raw bytes until the handler decodes it, so that a malformed message is an INVALID_ARGUMENT with a reason. */
const traceService: grpc.ServiceDefinition = {
  Export: {
    path: EXPORT_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: (b: Buffer) => b,
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: (b: Buffer) => b,
    responseDeserialize: (b: Buffer) => b,
  },
};

export interface GrpcReceiverInit {
  pipeline: Pipeline;
  config: ResumewatchConfig;
  budget: InflightBudget;
  inflight: InflightRequests;
  shed: () => void;
}

export interface GrpcReceiver {
  port: number;
  server: grpc.Server;
  /** Stops accepting connections and closes the open ones once their calls are answered (forced after graceMs). */
  close(graceMs: number): Promise<void>;
}

/**
 * Every call, from its start: refused without the token from its metadata, before its message is read;
 * given --idle-timeout to deliver its message (an unfinished stream is cancelled, not kept); and holding
 * --max-decompressed bytes of the in-flight budget until it is answered, because grpc-js buffers a
 * message out of our sight until it is complete: so calls being received are bounded in bytes too.
 * A call that finds the budget full is refused at once with RESOURCE_EXHAUSTED and RetryInfo.
 */
function guard({ config, budget, shed }: GrpcReceiverInit): grpc.ServerInterceptor {
  const reserve = config.maxDecompressedBytes;
  // The listeners' Host check (host-policy.ts) on the call's :authority (grpc-js: `:authority`, else
  // `host`). No browser speaks cleartext HTTP/2 to this port, so DNS rebinding cannot reach it; the
  // check costs one comparison a call and keeps one policy for every listener of the --host.
  const hosts = hostCheck({
    bindHost: config.host,
    allowedHosts: config.allowedHosts,
    allowedOrigins: config.allowedOrigins,
  });
  return (_method, call) => {
    let held = false;
    let timer: NodeJS.Timeout | undefined;
    const release = (): void => {
      clearTimeout(timer);
      if (held) budget.release(reserve);
      held = false;
    };
    const refuse = (code: grpc.status, details: string, metadata = new grpc.Metadata()): void => {
      release();
      call.sendStatus({ code, details, metadata });
    };
    return new grpc.ServerInterceptingCall(call, {
      start: (next) => {
        next(
          new grpc.ServerListenerBuilder()
            .withOnReceiveMetadata((metadata, mdNext) => {
              const foreign = hosts(call.getHost(), undefined);
              if (foreign) return refuse(grpc.status.PERMISSION_DENIED, foreign.message);
              const auth = metadata.get('authorization')[0];
              if (!authorized(config.token, typeof auth === 'string' ? auth : undefined)) {
                return refuse(grpc.status.UNAUTHENTICATED, 'missing or wrong bearer token');
              }
              if (!budget.reserve(reserve)) {
                shed();
                const details = `server busy: request bodies in flight reach ${config.maxInflightBytes} bytes (--max-inflight); retry later`;
                const trailers = new grpc.Metadata();
                trailers.set(
                  STATUS_DETAILS_KEY,
                  encodeStatus(RpcCode.RESOURCE_EXHAUSTED, details, retryInfo(config.retryAfterMs)),
                );
                return refuse(grpc.status.RESOURCE_EXHAUSTED, details, trailers);
              }
              held = true;
              timer = setTimeout(
                () =>
                  refuse(
                    grpc.status.DEADLINE_EXCEEDED,
                    `no complete message within ${config.idleTimeoutMs} ms (--idle-timeout)`,
                  ),
                config.idleTimeoutMs,
              );
              timer.unref();
              mdNext(metadata);
            })
            .withOnReceiveMessage((message, msgNext) => {
              clearTimeout(timer);
              msgNext(message);
            })
            .withOnCancel(release)
            .build(),
        );
      },
      sendStatus: (status, next) => {
        release();
        next(status);
      },
    });
  };
}

/**
 * Starts the OTLP/gRPC receiver (TraceService/Export); gzip-compressed messages are decompressed by grpc-js.
 * Connections are accepted by our own listener and handed to grpc-js, so that their number is capped
 * (--max-connections) and one that never starts HTTP/2 is closed (--header-timeout).
 */
export async function startGrpcReceiver(init: GrpcReceiverInit, port: number): Promise<GrpcReceiver> {
  const { pipeline, config, inflight } = init;
  // The gRPC door feeds nothing but the detector and the evidence: only the attributes they read are
  // converted, and a span that cannot matter to them is counted and skipped.
  const detectorOnly = { detectorAttributesOnly: true, onSkipped: pipeline.skipped } as const;
  const server = new grpc.Server({
    'grpc.max_receive_message_length': config.maxDecompressedBytes,
    'grpc.max_concurrent_streams': MAX_STREAMS_PER_CONNECTION,
    'grpc.max_connection_idle_ms': config.idleTimeoutMs,
    interceptors: [guard(init)],
  });
  server.addService(traceService, {
    Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      // The call's bytes are held in the budget by guard() until it is answered.
      inflight.enter();
      try {
        const result = pipeline.ingest((sink) => decodeProtobufRequest(call.request, sink, detectorOnly));
        callback(null, encodeProtobufResponse(result.invalid, rejectionMessage(result)));
      } catch (e) {
        if (e instanceof OtlpDecodeError) callback({ code: grpc.status.INVALID_ARGUMENT, details: e.message });
        else callback({ code: grpc.status.INTERNAL, details: `internal error: ${(e as Error).message}` });
      } finally {
        inflight.leave();
      }
    },
  });
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const listener: NetServer = createNetServer((socket) => {
    // A connection that has not started HTTP/2 within --header-timeout is closed; once it has, grpc-js
    // owns it: its calls have --idle-timeout to deliver their message, and a connection without calls
    // closes after --idle-timeout (max_connection_idle_ms).
    socket.setTimeout(config.headerTimeoutMs, () => (socket.bytesRead === 0 ? socket.destroy() : socket.setTimeout(0)));
    injector.injectConnection(socket);
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
        injector.drain(graceMs);
        const force = setTimeout(() => {
          injector.destroy();
          server.forceShutdown();
          resolve();
        }, graceMs);
        force.unref();
        server.tryShutdown(() => {
          clearTimeout(force);
          injector.destroy();
          resolve();
        });
      }),
  };
}
