import type { IncomingMessage, ServerResponse } from 'node:http';
import { createGunzip } from 'node:zlib';
import type { ResumewatchConfig } from '../config.js';
import { decodeJsonRequest } from '../otlp/json.js';
import { decodeProtobufRequest } from '../otlp/protobuf.js';
import { OtlpDecodeError, type DecodeResult } from '../otlp/errors.js';
import { encodeProtobufResponse, jsonResponse, rejectionMessage } from '../otlp/response.js';
import { authorized } from './auth.js';
import type { InflightRequests } from './drain.js';
import { Reservation, type InflightBudget } from './inflight.js';
import type { Pipeline } from './pipeline.js';
import { RpcCode, sendStatus } from './status.js';

const TRACES_PATH = '/v1/traces';

type Encoding = 'json' | 'protobuf';

function encodingOf(contentType: string | undefined): Encoding | undefined {
  const base = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (base === 'application/json') return 'json';
  if (base === 'application/x-protobuf' || base === 'application/protobuf') return 'protobuf';
  return undefined;
}

export interface HttpReceiverInit {
  pipeline: Pipeline;
  config: ResumewatchConfig;
  budget: InflightBudget;
  inflight: InflightRequests;
  /** Counts a request shed for the in-flight budget. */
  shed: () => void;
}

/**
 * The OTLP/HTTP receiver: POST /v1/traces in JSON or protobuf, optionally gzip-compressed.
 * Everything that can be refused from the headers (path, method, token, content type, declared size,
 * in-flight budget) is answered before a byte of the body is read, with `Connection: close`, so a
 * client cannot make the receiver read or hold a body it will refuse.
 */
export function otlpHttpHandler({ pipeline, config, budget, inflight, shed }: HttpReceiverInit) {
  const tooLarge = `body exceeds ${config.maxBodyBytes} bytes (--max-body)`;
  // The JSON scanner refuses nesting past --max-json-depth at the first bracket too deep (the 16 M levels of
  // `[` a hostile body can hold cost microseconds); both decoders convert only what the detector reads.
  const jsonOptions = { detectorAttributesOnly: true, maxDepth: config.maxJsonDepth } as const;
  const protobufOptions = { detectorAttributesOnly: true } as const;
  const busy = `server busy: request bodies in flight reach ${config.maxInflightBytes} bytes (--max-inflight); retry later`;
  return (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '').split('?')[0];
    const encoding = encodingOf(req.headers['content-type']);
    const pb = encoding === 'protobuf';
    const refuse = (http: number, code: number, message: string, retryAfterMs?: number): void => {
      res.setHeader('connection', 'close');
      sendStatus(res, http, code, message, pb, retryAfterMs);
    };
    if (path !== TRACES_PATH) return refuse(404, RpcCode.UNIMPLEMENTED, `no such path: ${path}; spans go to POST ${TRACES_PATH}`);
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return refuse(405, RpcCode.UNIMPLEMENTED, `${req.method} not allowed; use POST`);
    }
    if (!authorized(config.token, req.headers.authorization)) {
      res.setHeader('www-authenticate', 'Bearer');
      return refuse(401, RpcCode.UNAUTHENTICATED, 'missing or wrong bearer token');
    }
    if (encoding === undefined) {
      res.setHeader('connection', 'close');
      return sendStatus(res, 415, RpcCode.INVALID_ARGUMENT, `unsupported Content-Type "${req.headers['content-type'] ?? ''}"; use application/json or application/x-protobuf`, false);
    }
    const contentEncoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (contentEncoding !== 'gzip' && contentEncoding !== 'identity') {
      return refuse(415, RpcCode.INVALID_ARGUMENT, `unsupported Content-Encoding "${contentEncoding}"; use gzip or none`);
    }
    const lengthHeader = req.headers['content-length'];
    const declared = lengthHeader === undefined ? undefined : Number(lengthHeader);
    if (declared !== undefined && declared > config.maxBodyBytes) return refuse(413, RpcCode.RESOURCE_EXHAUSTED, tooLarge);

    const reservation = new Reservation(budget);
    inflight.enter();
    res.once('close', () => {
      reservation.releaseAll();
      inflight.leave();
    });
    const shedding = (): void => {
      shed();
      refuse(429, RpcCode.RESOURCE_EXHAUSTED, busy, config.retryAfterMs);
    };
    // A declared length is reserved whole, before reading: a full budget refuses at once.
    if (declared !== undefined && !reservation.take(declared)) return shedding();

    const chunks: Buffer[] = [];
    let size = 0;
    let stopped = false;
    const stop = (): void => {
      stopped = true;
      chunks.length = 0;
      req.off('data', onData);
      req.pause();
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > config.maxBodyBytes) {
        stop();
        return refuse(413, RpcCode.RESOURCE_EXHAUSTED, tooLarge);
      }
      // Without a declared length (or past it), every chunk is reserved as it arrives.
      if ((declared === undefined || size > declared) && !reservation.take(chunk.length)) {
        stop();
        return shedding();
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.on('error', () => stop());
    req.on('end', () => {
      if (stopped) return;
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      chunks.length = 0;
      if (contentEncoding !== 'gzip') return handle(body);
      gunzipBounded(body, config.maxDecompressedBytes, reservation, (failure, plain) => {
        if (failure === 'too-large') return refuse(413, RpcCode.RESOURCE_EXHAUSTED, `decompressed body exceeds ${config.maxDecompressedBytes} bytes (--max-decompressed)`);
        if (failure === 'busy') return shedding();
        if (failure !== undefined) return refuse(400, RpcCode.INVALID_ARGUMENT, `malformed gzip body: ${failure.message}`);
        handle(plain!);
      });
    });

    function handle(body: Buffer): void {
      let result: DecodeResult;
      try {
        result = pipeline.ingest((sink) => {
          if (pb) return decodeProtobufRequest(body, sink, protobufOptions);
          return decodeJsonRequest(body, sink, jsonOptions);
        });
      } catch (e) {
        if (e instanceof OtlpDecodeError) return sendStatus(res, 400, RpcCode.INVALID_ARGUMENT, e.message, pb);
        // Never a crash: whatever went wrong is this request's answer.
        return sendStatus(res, 500, RpcCode.INTERNAL, `internal error: ${(e as Error).message}`, pb);
      }
      const message = rejectionMessage(result);
      const out = pb ? encodeProtobufResponse(result.invalid, message) : Buffer.from(jsonResponse(result.invalid, message));
      res.writeHead(200, { 'content-type': pb ? 'application/x-protobuf' : 'application/json', 'content-length': out.length });
      res.end(out);
    }
  };
}

/** Gunzips, reserving every decompressed chunk in the budget and stopping at `limit` bytes. */
function gunzipBounded(
  body: Buffer,
  limit: number,
  reservation: Reservation,
  done: (failure: 'too-large' | 'busy' | Error | undefined, plain?: Buffer) => void,
): void {
  const z = createGunzip();
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const fail = (why: 'too-large' | 'busy' | Error): void => {
    if (finished) return;
    finished = true;
    chunks.length = 0;
    z.destroy();
    done(why);
  };
  z.on('data', (chunk: Buffer) => {
    if (finished) return;
    size += chunk.length;
    if (size > limit) return fail('too-large');
    if (!reservation.take(chunk.length)) return fail('busy');
    chunks.push(chunk);
  });
  z.on('error', (e) => fail(e));
  z.on('end', () => {
    if (finished) return;
    finished = true;
    done(undefined, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
  });
  z.end(body);
}
