import * as grpc from '@grpc/grpc-js';
import type { ResumewatchConfig } from '../config.js';
import { OtlpDecodeError } from '../otlp/errors.js';
import { decodeProtobufRequest } from '../otlp/protobuf.js';
import { encodeProtobufResponse, rejectionMessage } from '../otlp/response.js';
import { authorized } from './auth.js';
import type { Pipeline } from './pipeline.js';

const EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';

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

/** Starts the OTLP/gRPC receiver (TraceService/Export); gzip-compressed messages are decompressed by grpc-js. */
export async function startGrpcReceiver(pipeline: Pipeline, config: ResumewatchConfig, port: number): Promise<{ port: number; server: grpc.Server }> {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': config.maxDecompressedBytes,
  });
  server.addService(traceService, {
    Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      const auth = call.metadata.get('authorization')[0];
      if (!authorized(config.token, typeof auth === 'string' ? auth : undefined)) {
        return callback({ code: grpc.status.UNAUTHENTICATED, details: 'missing or wrong bearer token' });
      }
      try {
        const result = pipeline.ingest((sink) => decodeProtobufRequest(call.request, sink));
        callback(null, encodeProtobufResponse(result.invalid, rejectionMessage(result)));
      } catch (e) {
        if (e instanceof OtlpDecodeError) return callback({ code: grpc.status.INVALID_ARGUMENT, details: e.message });
        callback({ code: grpc.status.INTERNAL, details: (e as Error).message });
      }
    },
  });
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return { port: bound, server };
}
