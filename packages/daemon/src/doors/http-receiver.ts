import type { IncomingMessage, ServerResponse } from 'node:http';
import { createGunzip } from 'node:zlib';
import type { ResumewatchConfig } from '../config.js';
import {
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
import type { InflightBudget } from './inflight.js';
import type { Pipeline } from './pipeline.js';
import { endAfterRefusedBody } from './refused-body.js';
import { RpcCode, sendStatus } from './status.js';

const TRACES_PATH = '/v1/traces';

/** Body buffers kept for reuse while idle, and the largest one kept: 8 MiB held at most between requests. */
const KEPT_BODY_BUFFERS = 8;
const KEPT_BODY_BUFFER_BYTES = 1024 * 1024;
/** The first buffer of a body without a declared length; it doubles as the body grows, up to --max-body. */
const UNDECLARED_FIRST_BYTES = 64 * 1024;

/**
 * The answer to a request whose spans were all accepted: an empty ExportTraceServiceResponse, its headers
 * as Node's flat list (nothing to walk). The JSON one is a string: Node writes it in one piece with the
 * head, where a Buffer is a second write.
 */
const JSON_OK = jsonResponse(0, '');
const PROTOBUF_OK = encodeProtobufResponse(0, '');
const JSON_OK_HEADERS = ['content-type', 'application/json', 'content-length', String(Buffer.byteLength(JSON_OK))];
const PROTOBUF_OK_HEADERS = ['content-type', 'application/x-protobuf', 'content-length', String(PROTOBUF_OK.length)];

type Encoding = 'json' | 'protobuf';

function encodingOf(contentType: string | undefined): Encoding | undefined {
  // What exporters send, compared as is; anything else is read as a media type (case, parameters, blanks).
  if (contentType === 'application/json') return 'json';
  if (contentType === 'application/x-protobuf') return 'protobuf';
  const base = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (base === 'application/json') return 'json';
  if (base === 'application/x-protobuf' || base === 'application/protobuf') return 'protobuf';
  return undefined;
}

/** The request's path: its URL up to any query. */
function pathOf(url: string | undefined): string {
  if (url === undefined) return '';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
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
 *
 * What an accepted request costs beyond Node's parsing is kept small, as a bare `node:http` receiver's:
 * one object of state (`BodyRead`), reached by the listeners through the request (`this`), so that no
 * function is made per request; the body copied as it arrives into one buffer (reused when its length is
 * declared, grown by doubling up to --max-body when not), never a list of chunks joined; and the answer
 * written once, its head made once for every request.
 */
export function otlpHttpHandler(init: HttpReceiverInit): (req: IncomingMessage, res: ServerResponse) => void {
  const door = new Door(init);
  return (req, res) => door.request(req, res);
}

/** What every request of one receiver shares: its configuration, budget, buffers and messages. */
class Door {
  readonly pipeline: Pipeline;
  readonly config: ResumewatchConfig;
  readonly budget: InflightBudget;
  readonly inflight: InflightRequests;
  readonly shed: () => void;
  readonly bodies: BodyBuffers;
  readonly tooLarge: string;
  readonly busy: string;
  readonly refusedBody: { maxBytes: number };
  readonly jsonOptions;
  readonly protobufOptions;
  readonly hosts: ReturnType<typeof hostCheck>;

  constructor({ pipeline, config, budget, inflight, shed }: HttpReceiverInit) {
    this.pipeline = pipeline;
    this.config = config;
    this.budget = budget;
    this.inflight = inflight;
    this.shed = shed;
    this.tooLarge = `body exceeds ${config.maxBodyBytes} bytes (--max-body)`;
    this.busy = `server busy: request bodies in flight reach ${config.maxInflightBytes} bytes (--max-inflight); retry later`;
    this.refusedBody = { maxBytes: 2 * config.maxBodyBytes };
    this.bodies = new BodyBuffers(KEPT_BODY_BUFFERS, Math.min(KEPT_BODY_BUFFER_BYTES, config.maxBodyBytes));
    // The JSON scanner refuses nesting past --max-json-depth at the first bracket too deep (the 16 M levels of
    // `[` a hostile body can hold cost microseconds); both decoders convert only what the detector reads.
    // A span that cannot matter (an application's HTTP, database and framework spans) is checked, counted
    // and skipped, its record never made.
    const onSkipped = pipeline.skipped;
    this.jsonOptions = { detectorAttributesOnly: true, maxDepth: config.maxJsonDepth, onSkipped } as const;
    this.protobufOptions = { detectorAttributesOnly: true, onSkipped } as const;
    // The metrics port's check (host-policy.ts): a page on a rebound name (DNS rebinding) that posts spans
    // here as its own origin would feed the detector made-up findings; refused first, with the same 403
    // and the same line as the metrics port and the gateway, as an OTLP Status.
    this.hosts = hostCheck({
      bindHost: config.host,
      allowedHosts: config.allowedHosts,
      allowedOrigins: config.allowedOrigins,
    });
  }

  request(req: IncomingMessage, res: ServerResponse): void {
    const headers = req.headers;
    const encoding = encodingOf(headers['content-type']);
    const pb = encoding === 'protobuf';
    const foreign = this.hosts(headers.host, headers.origin);
    if (foreign) return this.refuse(req, res, pb, 0, 403, RpcCode.PERMISSION_DENIED, foreign.message);
    const path = pathOf(req.url);
    if (path !== TRACES_PATH)
      return this.refuse(
        req,
        res,
        pb,
        0,
        404,
        RpcCode.UNIMPLEMENTED,
        `no such path: ${path}; spans go to POST ${TRACES_PATH}`,
      );
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return this.refuse(req, res, pb, 0, 405, RpcCode.UNIMPLEMENTED, `${req.method} not allowed; use POST`);
    }
    if (!authorized(this.config.token, headers.authorization)) {
      res.setHeader('www-authenticate', 'Bearer');
      return this.refuse(req, res, pb, 0, 401, RpcCode.UNAUTHENTICATED, 'missing or wrong bearer token');
    }
    if (encoding === undefined)
      return this.refuse(
        req,
        res,
        false,
        0,
        415,
        RpcCode.INVALID_ARGUMENT,
        `unsupported Content-Type "${headers['content-type'] ?? ''}"; use application/json or application/x-protobuf`,
      );
    const contentEncoding = headers['content-encoding'];
    const encodingName = contentEncoding === undefined ? 'identity' : contentEncoding.toLowerCase();
    if (encodingName !== 'gzip' && encodingName !== 'identity')
      return this.refuse(
        req,
        res,
        pb,
        0,
        415,
        RpcCode.INVALID_ARGUMENT,
        `unsupported Content-Encoding "${encodingName}"; use gzip or none`,
      );
    const lengthHeader = headers['content-length'];
    const declared = lengthHeader === undefined ? -1 : Number(lengthHeader);
    if (declared > this.config.maxBodyBytes)
      return this.refuse(req, res, pb, 0, 413, RpcCode.RESOURCE_EXHAUSTED, this.tooLarge);

    const read = new BodyRead(this, req, res, pb, encodingName === 'gzip', declared);
    (req as Tagged)[READ] = read;
    this.inflight.enter();
    res.on('close', resClosed);
    // A declared length is reserved whole, before reading: a full budget refuses at once.
    if (declared >= 0 && !read.take(declared)) return read.shedding();
    read.start();
    req.on('data', reqData);
    req.on('end', reqEnd);
    req.on('error', reqError);
  }

  /**
   * Answers with an OTLP Status and `Connection: close`; the rest of an unread body is read and thrown
   * away (`endAfterRefusedBody`, `read` bytes of it read before).
   */
  refuse(
    req: IncomingMessage,
    res: ServerResponse,
    pb: boolean,
    read: number,
    http: number,
    code: number,
    message: string,
    retryAfterMs?: number,
  ): void {
    res.setHeader('connection', 'close');
    const bounds = this.refusedBody;
    sendStatus(res, http, code, message, pb, retryAfterMs, (body) => endAfterRefusedBody(req, res, body, read, bounds));
  }
}

/** The request's BodyRead, kept on the request itself so that the listeners (`this` the request) are shared. */
const READ = Symbol('otlp body read');
type Tagged = IncomingMessage & { [READ]?: BodyRead };

function reqData(this: IncomingMessage, chunk: Buffer): void {
  (this as Tagged)[READ]!.data(chunk);
}
function reqEnd(this: IncomingMessage): void {
  (this as Tagged)[READ]!.end();
}
function reqError(this: IncomingMessage): void {
  (this as Tagged)[READ]!.stop();
}
function resClosed(this: ServerResponse): void {
  (this.req as Tagged)[READ]?.leave();
}

/**
 * One request's body as it is read: its bytes in one buffer, the in-flight bytes it holds, and the end
 * of its life (answered, refused or cut), after which it holds nothing.
 */
class BodyRead {
  /** Body bytes received so far. */
  size = 0;
  /** Where the body is copied; undefined once stopped or done with. */
  buf: Buffer | undefined;
  /** Whether `buf` goes back to the door's buffers once the body is decoded. */
  private pooled = false;
  /** Bytes reserved in the in-flight budget, released once (answered, or the connection gone). */
  private held = 0;
  private stopped = false;
  private done = false;
  /**
   * While gunzip runs: it reserves each decompressed chunk as it comes, so what is held is released when
   * it ends, not when the answer closes (a client gone meanwhile closes it first).
   */
  private gunzipping = false;

  constructor(
    private readonly door: Door,
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly pb: boolean,
    private readonly gzip: boolean,
    /** The declared length, -1 when none. */
    private readonly declared: number,
  ) {}

  /**
   * The body's buffer. A declared identity body is copied into a reused buffer of the door's. A gzip one
   * gets one of its own, never reused: gunzip reads its input later, on another thread, and may still hold
   * it when the request is refused. An undeclared one starts small and doubles as it grows.
   */
  start(): void {
    const declared = this.declared;
    if (declared === 0) return;
    if (declared > 0 && !this.gzip) {
      this.buf = this.door.bodies.take(declared);
      this.pooled = true;
    } else {
      this.buf = Buffer.allocUnsafeSlow(
        declared > 0 ? declared : Math.min(UNDECLARED_FIRST_BYTES, this.door.config.maxBodyBytes),
      );
    }
  }

  take(n: number): boolean {
    if (!this.door.budget.reserve(n)) return false;
    this.held += n;
    return true;
  }

  data(chunk: Buffer): void {
    const at = this.size;
    const size = at + chunk.length;
    this.size = size;
    const max = this.door.config.maxBodyBytes;
    if (size > max) {
      this.stop();
      return this.refuse(413, RpcCode.RESOURCE_EXHAUSTED, this.door.tooLarge);
    }
    // Without a declared length (or past it), every chunk is reserved as it arrives.
    if ((this.declared < 0 || size > this.declared) && !this.take(chunk.length)) {
      this.stop();
      return this.shedding();
    }
    let buf = this.buf;
    if (buf === undefined || size > buf.length) {
      // Undeclared and past its buffer (or, which Node's parser does not let happen, more than declared):
      // a buffer twice as long, at most --max-body; the old one is dropped.
      const grown = Buffer.allocUnsafeSlow(Math.min(max, Math.max(size, 2 * (buf?.length ?? 0))));
      if (buf !== undefined && at > 0) buf.copy(grown, 0, 0, at);
      this.giveBack();
      this.buf = buf = grown;
    }
    buf.set(chunk, at);
  }

  end(): void {
    if (this.stopped) return;
    const size = this.size;
    const body = this.buf === undefined ? Buffer.alloc(0) : this.buf.subarray(0, size);
    if (!this.gzip) {
      // Decoding is synchronous and keeps no view of the bytes: the buffer is free again after it.
      this.handle(body);
      return this.giveBack();
    }
    this.buf = undefined;
    this.gunzipping = true;
    gunzipBounded(body, this.door.config.maxDecompressedBytes, this);
  }

  /** After gunzip: its failure, or the plain body. */
  gunzipped(failure: 'too-large' | 'busy' | Error | undefined, plain?: Buffer): void {
    this.gunzipping = false;
    // The answer closed while gunzip ran (the client went away): nothing will release its bytes but this.
    if (this.done) this.release();
    if (failure === 'too-large')
      return this.refuse(
        413,
        RpcCode.RESOURCE_EXHAUSTED,
        `decompressed body exceeds ${this.door.config.maxDecompressedBytes} bytes (--max-decompressed)`,
      );
    if (failure === 'busy') return this.shedding();
    if (failure !== undefined)
      return this.refuse(400, RpcCode.INVALID_ARGUMENT, `malformed gzip body: ${failure.message}`);
    this.handle(plain!);
  }

  private handle(body: Buffer): void {
    const { res, pb } = this;
    const door = this.door;
    let result: DecodeResult;
    try {
      result = pb
        ? door.pipeline.ingestProtobuf(body, door.protobufOptions)
        : door.pipeline.ingestJson(body, door.jsonOptions);
    } catch (e) {
      if (e instanceof OtlpDecodeError) return sendStatus(res, 400, RpcCode.INVALID_ARGUMENT, e.message, pb);
      // Never a crash: whatever went wrong is this request's answer.
      return sendStatus(res, 500, RpcCode.INTERNAL, `internal error: ${(e as Error).message}`, pb);
    }
    if (result.invalid === 0) {
      // Every span accepted: the same empty answer each time, its head and body made once.
      if (pb) res.writeHead(200, PROTOBUF_OK_HEADERS).end();
      else res.writeHead(200, JSON_OK_HEADERS).end(JSON_OK);
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

  private giveBack(): void {
    if (this.pooled && this.buf !== undefined) this.door.bodies.give(this.buf);
    this.pooled = false;
    this.buf = undefined;
  }

  /** Stops reading: what was read is dropped, and the request holds nothing any more. */
  stop(): void {
    this.stopped = true;
    this.req.off('data', reqData);
    this.req.pause();
    this.giveBack();
    this.leave();
  }

  /**
   * Once the request is answered or refused: a refused body still being read and thrown away holds no
   * bytes, and a graceful stop does not wait for it.
   */
  leave(): void {
    if (this.done) return;
    this.done = true;
    if (!this.gunzipping) this.release();
    this.door.inflight.leave();
  }

  private release(): void {
    this.door.budget.release(this.held);
    this.held = 0;
  }

  shedding(): void {
    this.leave();
    this.door.shed();
    this.refuse(429, RpcCode.RESOURCE_EXHAUSTED, this.door.busy, this.door.config.retryAfterMs);
  }

  private refuse(http: number, code: number, message: string, retryAfterMs?: number): void {
    this.door.refuse(this.req, this.res, this.pb, this.size, http, code, message, retryAfterMs);
  }
}

/** Gunzips, reserving every decompressed chunk in the budget and stopping at `limit` bytes. */
function gunzipBounded(body: Buffer, limit: number, read: BodyRead): void {
  const z = createGunzip();
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const fail = (why: 'too-large' | 'busy' | Error): void => {
    if (finished) return;
    finished = true;
    chunks.length = 0;
    z.destroy();
    read.gunzipped(why);
  };
  z.on('data', (chunk: Buffer) => {
    if (finished) return;
    size += chunk.length;
    if (size > limit) return fail('too-large');
    if (!read.take(chunk.length)) return fail('busy');
    chunks.push(chunk);
  });
  z.on('error', (e) => fail(e));
  z.on('end', () => {
    if (finished) return;
    finished = true;
    read.gunzipped(undefined, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
  });
  z.end(body);
}
