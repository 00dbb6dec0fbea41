import { constants as h2, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { ResumewatchConfig } from '../config.js';
import type { HostCheck } from '../host-policy.js';
import { authorized } from './auth.js';
import { decompress, type DecompressError } from './grpc-decompress.js';
import { UnaryMessageReader, type FramingError } from './grpc-framing.js';
import { GrpcCode, GrpcHeader, sendStatus } from './grpc-reply.js';
import type { InflightBudget } from './inflight.js';
import { encodeStatus, retryInfo } from './status.js';

const EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';
/** grpc-timeout: at most 8 digits and a unit (PROTOCOL-HTTP2.md, Timeout). */
const TIMEOUT = /^(\d{1,8})([HMSmun])$/;
const TIMEOUT_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

export interface CallDoor {
  config: ResumewatchConfig;
  budget: InflightBudget;
  shed: () => void;
  hosts: HostCheck;
  /** Answers the call with its complete, decompressed message. */
  handle(stream: ServerHttp2Stream, message: Buffer): void;
}

const ignore = (): void => undefined;

/**
 * One call on the gRPC port. Refused from its headers alone, before any message byte is read: another
 * content type (415, as grpc-js), another method (UNIMPLEMENTED), a foreign :authority (the listeners'
 * Host check), no token (UNAUTHENTICATED), a full in-flight budget (RESOURCE_EXHAUSTED with RetryInfo).
 * Otherwise it holds --max-decompressed bytes of the budget from its start until it is answered (and a
 * compressed message's own bytes too while it is decompressed), and has
 * --idle-timeout (or its grpc-timeout, when shorter) to deliver its message.
 */
export function startCall(door: CallDoor, stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
  // Errors (a reset from the client, a session destroyed) end in 'close', which releases the call.
  stream.on('error', ignore);
  const { config, budget } = door;
  const type = headers[h2.HTTP2_HEADER_CONTENT_TYPE];
  if (typeof type !== 'string' || !type.startsWith('application/grpc')) {
    if (!stream.headersSent && !stream.closed) stream.respond({ ':status': 415 }, { endStream: true });
    return dropRest(stream, config.idleTimeoutMs);
  }
  const path = headers[h2.HTTP2_HEADER_PATH];
  const refuse = (code: number, details: string, trailers?: Record<string, string>): void => {
    sendStatus(stream, code, details, trailers);
    dropRest(stream, config.idleTimeoutMs);
  };
  if (path !== EXPORT_PATH) return refuse(GrpcCode.UNIMPLEMENTED, `The server does not implement the method ${path}`);
  const authority = headers[h2.HTTP2_HEADER_AUTHORITY] ?? headers.host;
  const foreign = door.hosts(typeof authority === 'string' ? authority : undefined, undefined);
  if (foreign) return refuse(GrpcCode.PERMISSION_DENIED, foreign.message);
  const auth = headers.authorization;
  if (!authorized(config.token, typeof auth === 'string' ? auth : undefined))
    return refuse(GrpcCode.UNAUTHENTICATED, 'missing or wrong bearer token');
  let limitMs = config.idleTimeoutMs;
  let limitText = `no complete message within ${config.idleTimeoutMs} ms (--idle-timeout)`;
  const timeout = headers[GrpcHeader.TIMEOUT];
  if (timeout !== undefined) {
    const m = TIMEOUT.exec(String(timeout));
    if (m === null) return refuse(GrpcCode.INTERNAL, `Invalid grpc-timeout value "${String(timeout)}"`);
    const ms = Math.trunc(Number(m[1]) * TIMEOUT_UNIT_MS[m[2]!]!);
    if (ms < limitMs) [limitMs, limitText] = [ms, 'Deadline exceeded'];
  }
  if (!budget.reserve(config.maxDecompressedBytes)) {
    const failure = busy(door);
    return refuse(failure.code, failure.details, failure.trailers);
  }
  const encoding = headers[GrpcHeader.ENCODING];
  new ExportCall(door, stream, typeof encoding === 'string' ? encoding : undefined, limitMs, limitText);
}

/** A full in-flight budget: RESOURCE_EXHAUSTED with RetryInfo, counted as shed. */
function busy(door: CallDoor): DecompressError {
  door.shed();
  const { config } = door;
  const details = `server busy: request bodies in flight reach ${config.maxInflightBytes} bytes (--max-inflight); retry later`;
  const status = encodeStatus(GrpcCode.RESOURCE_EXHAUSTED, details, retryInfo(config.retryAfterMs));
  return {
    code: GrpcCode.RESOURCE_EXHAUSTED,
    details,
    trailers: { [GrpcHeader.STATUS_DETAILS]: status.toString('base64') },
  };
}

/** A call admitted: its message read, then answered; its bytes held in the budget until then. */
class ExportCall {
  private readonly reader: UnaryMessageReader;
  private readonly timer: NodeJS.Timeout;
  private held = true;
  /** The request stream has ended (the client sent END_STREAM). */
  private ended = false;
  /** gunzip still runs (it holds its input and output): the bytes are released when it returns. */
  private decompressing = false;
  /**
   * The compressed message's bytes, reserved beside --max-decompressed while it is decompressed: input
   * and output are held at once then, so the call holds up to its message and the bound, not the bound.
   */
  private compressedHeld = 0;

  constructor(
    private readonly door: CallDoor,
    private readonly stream: ServerHttp2Stream,
    private readonly encoding: string | undefined,
    limitMs: number,
    limitText: string,
  ) {
    this.reader = new UnaryMessageReader(door.config.maxDecompressedBytes);
    // Not delivered in time: refused and the stream cancelled, not kept.
    this.timer = setTimeout(() => this.refuse({ code: GrpcCode.DEADLINE_EXCEEDED, details: limitText }), limitMs);
    this.timer.unref();
    stream.on('data', (chunk: Buffer) => {
      if (!this.held) return;
      const failure = this.reader.push(chunk);
      if (failure) this.refuse(failure);
    });
    stream.once('end', () => this.end());
    stream.once('close', () => {
      clearTimeout(this.timer);
      if (!this.decompressing) this.release();
    });
  }

  private end(): void {
    this.ended = true;
    clearTimeout(this.timer);
    if (!this.held) return;
    const message = this.reader.finish();
    if ('code' in message) return this.refuse(message);
    if (!this.reader.compressed) return this.answer(message);
    if (!this.door.budget.reserve(message.length)) return this.refuse(busy(this.door));
    this.compressedHeld = message.length;
    this.decompressing = true;
    decompress(this.encoding, message, this.door.config.maxDecompressedBytes, (failure, plain) => {
      this.decompressing = false;
      if (this.stream.destroyed) return this.release();
      if (failure) return this.refuse(failure);
      this.answer(plain!);
    });
  }

  private answer(message: Buffer): void {
    try {
      this.door.handle(this.stream, message);
    } finally {
      this.release();
    }
  }

  private refuse(failure: FramingError | DecompressError): void {
    clearTimeout(this.timer);
    this.release();
    sendStatus(this.stream, failure.code, failure.details, (failure as DecompressError).trailers);
    if (this.ended) return;
    // At its deadline the client has had its whole time: reset at once. Otherwise it may still be sending.
    if (failure.code === GrpcCode.DEADLINE_EXCEEDED) cancel(this.stream);
    else dropRest(this.stream, this.door.config.idleTimeoutMs);
  }

  private release(): void {
    if (this.held) this.door.budget.release(this.door.config.maxDecompressedBytes + this.compressedHeld);
    this.held = false;
  }
}

/**
 * What the client still sends once its call is answered is read and dropped, and the stream reset
 * (RST_STREAM NO_ERROR) only if the client has not ended it within `waitMs`. A reset right after the
 * response, while the client is still sending, loses the response on Node 22's http2 client: grpc-js then
 * reports "Received RST_STREAM with code 0", not the status. A client that ends its request in time gets
 * no reset; one that keeps sending is cut off at `waitMs`.
 */
function dropRest(stream: ServerHttp2Stream, waitMs: number): void {
  if (stream.closed || stream.destroyed || stream.readableEnded) return;
  stream.on('data', ignore);
  const timer = setTimeout(() => cancel(stream), waitMs);
  timer.unref();
  stream.once('end', () => clearTimeout(timer));
  stream.once('close', () => clearTimeout(timer));
}

/**
 * The request's remaining DATA is not wanted once the call is answered: RST_STREAM(NO_ERROR) after the
 * complete response asks the client to stop sending it (RFC 9113 §8.1), and frees the stream's slot.
 */
function cancel(stream: ServerHttp2Stream): void {
  if (!stream.closed && !stream.destroyed) stream.close(h2.NGHTTP2_NO_ERROR);
}
