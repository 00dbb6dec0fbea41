import type { IncomingMessage, ServerResponse } from 'node:http';
import { createGunzip } from 'node:zlib';
import type { ResumewatchConfig } from '../config.js';
import {
  decodeJsonRequest,
  decodeProtobufRequest,
  OtlpDecodeError,
  type DecodeResult,
  encodeProtobufResponse,
  jsonResponse,
  rejectionMessage,
} from '@resumewatch/detector';
import { hostCheck } from '../host-policy.js';
import { authorized } from './auth.js';
import { BodyBuffers } from './body-buffers.js';
import type { InflightRequests } from './drain.js';
import { Reservation, type InflightBudget } from './inflight.js';
import type { Pipeline } from './pipeline.js';
import { endAfterRefusedBody } from './refused-body.js';
import { RpcCode, sendStatus } from './status.js';

const TRACES_PATH = '/v1/traces';

/** Body buffers kept for reuse while idle, and the largest one kept: 8 MiB held at most between requests. */
const KEPT_BODY_BUFFERS = 8;
const KEPT_BODY_BUFFER_BYTES = 1024 * 1024;

/** The answer to a request whose spans were all accepted: an empty ExportTraceServiceResponse. */
const JSON_OK = Buffer.from(jsonResponse(0, ''));
const PROTOBUF_OK = encodeProtobufResponse(0, '');
const JSON_OK_HEADERS = { 'content-type': 'application/json', 'content-length': JSON_OK.length } as const;
const PROTOBUF_OK_HEADERS = { 'content-type': 'application/x-protobuf', 'content-length': PROTOBUF_OK.length } as const;

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
 * Everything that can be refused from the headers (Host and Origin, path, method, token, content type, declared size,
 * in-flight budget) is answered before a byte of the body is read, with `Connection: close`, so a
 * client cannot make the receiver hold a body it will refuse. The rest of a refused body is still read
 * and thrown away, up to twice --max-body in all (`endAfterRefusedBody`): a client that is still sending
 * reads its answer instead of a reset connection.
 */
export function otlpHttpHandler({ pipeline, config, budget, inflight, shed }: HttpReceiverInit) {
  const tooLarge = `body exceeds ${config.maxBodyBytes} bytes (--max-body)`;
  // The JSON scanner refuses nesting past --max-json-depth at the first bracket too deep (the 16 M levels of
  // `[` a hostile body can hold cost microseconds); both decoders convert only what the detector reads.
  // A span that cannot matter (an application's HTTP, database and framework spans) is checked, counted
  // and skipped, its record never made.
  const onSkipped = pipeline.skipped;
  const jsonOptions = { detectorAttributesOnly: true, maxDepth: config.maxJsonDepth, onSkipped } as const;
  const protobufOptions = { detectorAttributesOnly: true, onSkipped } as const;
  const bodies = new BodyBuffers(KEPT_BODY_BUFFERS, Math.min(KEPT_BODY_BUFFER_BYTES, config.maxBodyBytes));
  const busy = `server busy: request bodies in flight reach ${config.maxInflightBytes} bytes (--max-inflight); retry later`;
  const refusedBody = { maxBytes: 2 * config.maxBodyBytes };
  // The metrics port's check (host-policy.ts): a page on a rebound name (DNS rebinding) that posts spans
  // here as its own origin would feed the detector made-up findings; refused first, with the same 403
  // and the same line as the metrics port and the gateway, as an OTLP Status.
  const hosts = hostCheck({
    bindHost: config.host,
    allowedHosts: config.allowedHosts,
    allowedOrigins: config.allowedOrigins,
  });
  return (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '').split('?')[0];
    const encoding = encodingOf(req.headers['content-type']);
    const pb = encoding === 'protobuf';
    /** Body bytes received so far. */
    let size = 0;
    const endRefused = (body: Buffer): void => endAfterRefusedBody(req, res, body, size, refusedBody);
    const refuse = (http: number, code: number, message: string, retryAfterMs?: number): void => {
      res.setHeader('connection', 'close');
      sendStatus(res, http, code, message, pb, retryAfterMs, endRefused);
    };
    const foreign = hosts(req.headers.host, req.headers.origin);
    if (foreign) return refuse(403, RpcCode.PERMISSION_DENIED, foreign.message);
    if (path !== TRACES_PATH)
      return refuse(404, RpcCode.UNIMPLEMENTED, `no such path: ${path}; spans go to POST ${TRACES_PATH}`);
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
      return sendStatus(
        res,
        415,
        RpcCode.INVALID_ARGUMENT,
        `unsupported Content-Type "${req.headers['content-type'] ?? ''}"; use application/json or application/x-protobuf`,
        false,
        undefined,
        endRefused,
      );
    }
    const contentEncoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (contentEncoding !== 'gzip' && contentEncoding !== 'identity') {
      return refuse(
        415,
        RpcCode.INVALID_ARGUMENT,
        `unsupported Content-Encoding "${contentEncoding}"; use gzip or none`,
      );
    }
    const lengthHeader = req.headers['content-length'];
    const declared = lengthHeader === undefined ? undefined : Number(lengthHeader);
    if (declared !== undefined && declared > config.maxBodyBytes)
      return refuse(413, RpcCode.RESOURCE_EXHAUSTED, tooLarge);

    const reservation = new Reservation(budget);
    inflight.enter();
    let done = false;
    // Once the request is answered or refused: a refused body still being read and thrown away holds no
    // bytes, and a graceful stop does not wait for it.
    const leave = (): void => {
      if (done) return;
      done = true;
      reservation.releaseAll();
      inflight.leave();
    };
    res.once('close', leave);
    const shedding = (): void => {
      leave();
      shed();
      refuse(429, RpcCode.RESOURCE_EXHAUSTED, busy, config.retryAfterMs);
    };
    // A declared length is reserved whole, before reading: a full budget refuses at once.
    if (declared !== undefined && !reservation.take(declared)) return shedding();

    // A declared body is copied into one reusable buffer as it arrives. An undeclared (chunked) one is
    // kept as its chunks and joined at the end, and so is a gzip one: gunzip reads its input later, on
    // another thread, and may still hold it when the request is refused, so its buffer is never reused.
    let pooled =
      declared !== undefined && declared > 0 && contentEncoding !== 'gzip' ? bodies.take(declared) : undefined;
    const chunks: Buffer[] = [];
    let stopped = false;
    const giveBack = (): void => {
      if (pooled !== undefined) bodies.give(pooled);
      pooled = undefined;
    };
    const stop = (): void => {
      stopped = true;
      chunks.length = 0;
      req.off('data', onData);
      req.pause();
      giveBack();
      leave();
    };
    const onData = (chunk: Buffer): void => {
      const at = size;
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
      if (pooled === undefined) chunks.push(chunk);
      else if (size <= pooled.length) pooled.set(chunk, at);
      else {
        // More than declared (Node's parser does not let this happen): the rest as chunks.
        chunks.push(Buffer.from(pooled.subarray(0, at)), chunk);
        giveBack();
      }
    };
    req.on('data', onData);
    req.on('error', () => stop());
    req.on('end', () => {
      if (stopped) return;
      if (pooled !== undefined) {
        // Decoding is synchronous and keeps no view of the bytes: the buffer is free again after it.
        handle(pooled.subarray(0, size));
        return giveBack();
      }
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      chunks.length = 0;
      if (contentEncoding !== 'gzip') return handle(body);
      gunzipBounded(body, config.maxDecompressedBytes, reservation, (failure, plain) => {
        if (failure === 'too-large')
          return refuse(
            413,
            RpcCode.RESOURCE_EXHAUSTED,
            `decompressed body exceeds ${config.maxDecompressedBytes} bytes (--max-decompressed)`,
          );
        if (failure === 'busy') return shedding();
        if (failure !== undefined)
          return refuse(400, RpcCode.INVALID_ARGUMENT, `malformed gzip body: ${failure.message}`);
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
      if (result.invalid === 0) {
        // Every span accepted: the same empty answer each time, headers and body made once.
        res.writeHead(200, pb ? PROTOBUF_OK_HEADERS : JSON_OK_HEADERS);
        res.end(pb ? PROTOBUF_OK : JSON_OK);
        return;
      }
      const message = rejectionMessage(result);
      const out = pb
        ? encodeProtobufResponse(result.invalid, message)
        : Buffer.from(jsonResponse(result.invalid, message));
      res.writeHead(200, {
        'content-type': pb ? 'application/x-protobuf' : 'application/json',
        'content-length': out.length,
      });
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
