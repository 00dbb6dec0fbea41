import type { IncomingMessage, ServerResponse } from 'node:http';
import { gunzip } from 'node:zlib';
import type { ResumewatchConfig } from '../config.js';
import { decodeJsonRequest } from '../otlp/json.js';
import { decodeProtobufRequest } from '../otlp/protobuf.js';
import { OtlpDecodeError, type DecodeResult } from '../otlp/errors.js';
import { encodeProtobufResponse, jsonResponse, rejectionMessage } from '../otlp/response.js';
import { authorized } from './auth.js';
import type { Pipeline } from './pipeline.js';
import { RpcCode, sendStatus } from './status.js';

const TRACES_PATH = '/v1/traces';
const DETECTOR_ONLY = { detectorAttributesOnly: true } as const;

type Encoding = 'json' | 'protobuf';

function encodingOf(contentType: string | undefined): Encoding | undefined {
  const base = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (base === 'application/json') return 'json';
  if (base === 'application/x-protobuf' || base === 'application/protobuf') return 'protobuf';
  return undefined;
}

/** The OTLP/HTTP receiver: POST /v1/traces in JSON or protobuf, optionally gzip-compressed. */
export function otlpHttpHandler(pipeline: Pipeline, config: ResumewatchConfig) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '').split('?')[0];
    const encoding = encodingOf(req.headers['content-type']);
    const pb = encoding === 'protobuf';
    if (path !== TRACES_PATH) return void drain(req, () => sendStatus(res, 404, RpcCode.UNIMPLEMENTED, `no such path: ${path}; spans go to POST ${TRACES_PATH}`, pb));
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return void drain(req, () => sendStatus(res, 405, RpcCode.UNIMPLEMENTED, `${req.method} not allowed; use POST`, pb));
    }
    if (!authorized(config.token, req.headers.authorization)) {
      res.setHeader('www-authenticate', 'Bearer');
      return void drain(req, () => sendStatus(res, 401, RpcCode.UNAUTHENTICATED, 'missing or wrong bearer token', pb));
    }
    if (encoding === undefined) {
      return void drain(req, () =>
        sendStatus(res, 415, RpcCode.INVALID_ARGUMENT, `unsupported Content-Type "${req.headers['content-type'] ?? ''}"; use application/json or application/x-protobuf`, false),
      );
    }
    const contentEncoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (contentEncoding !== 'gzip' && contentEncoding !== 'identity') {
      return void drain(req, () => sendStatus(res, 415, RpcCode.INVALID_ARGUMENT, `unsupported Content-Encoding "${contentEncoding}"; use gzip or none`, pb));
    }
    const tooLarge = `body exceeds ${config.maxBodyBytes} bytes`;
    const declared = Number(req.headers['content-length']);
    if (declared > config.maxBodyBytes) {
      res.setHeader('connection', 'close');
      return void drain(req, () => sendStatus(res, 413, RpcCode.RESOURCE_EXHAUSTED, tooLarge, pb));
    }
    readBody(req, config.maxBodyBytes, (body) => {
      if (body === undefined) return sendStatus(res, 413, RpcCode.RESOURCE_EXHAUSTED, tooLarge, pb);
      if (contentEncoding !== 'gzip') return handle(body);
      gunzip(body, { maxOutputLength: config.maxDecompressedBytes }, (err, plain) => {
        if (err) {
          if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
            return sendStatus(res, 413, RpcCode.RESOURCE_EXHAUSTED, `decompressed body exceeds ${config.maxDecompressedBytes} bytes`, pb);
          }
          return sendStatus(res, 400, RpcCode.INVALID_ARGUMENT, `malformed gzip body: ${err.message}`, pb);
        }
        handle(plain);
      });
    });

    function handle(body: Buffer): void {
      let result: DecodeResult;
      try {
        result = pipeline.ingest((sink) => (pb ? decodeProtobufRequest(body, sink) : decodeJsonRequest(body.toString('utf8'), sink, DETECTOR_ONLY)));
      } catch (e) {
        if (e instanceof OtlpDecodeError) return sendStatus(res, 400, RpcCode.INVALID_ARGUMENT, e.message, pb);
        throw e;
      }
      const message = rejectionMessage(result);
      const out = pb ? encodeProtobufResponse(result.invalid, message) : Buffer.from(jsonResponse(result.invalid, message));
      res.writeHead(200, { 'content-type': pb ? 'application/x-protobuf' : 'application/json', 'content-length': out.length });
      res.end(out);
    }
  };
}

/** Collects the body, or undefined once it passes `limit` (the rest is read and discarded). */
function readBody(req: IncomingMessage, limit: number, done: (body: Buffer | undefined) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  req.on('data', (chunk: Buffer) => {
    if (over) return;
    size += chunk.length;
    if (size > limit) {
      over = true;
      chunks.length = 0;
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => done(over ? undefined : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
  req.on('error', () => undefined);
}

function drain(req: IncomingMessage, then: () => void): void {
  if (req.readableEnded) return then();
  req.resume();
  req.on('end', then);
  req.on('error', () => undefined);
}
