import {
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type RequestOptions,
} from 'node:http';
import { type RequestOptions as HttpsRequestOptions, request as httpsRequest } from 'node:https';
import { urlToHttpOptions } from 'node:url';
import { HttpUpstreamAgent, HttpsUpstreamAgent, noteKeepAlive } from './upstream-agent.js';

export interface UpstreamOptions {
  /** PEM certificates trusted for an https upstream, in addition to Node's. */
  ca?: string | undefined;
  /**
   * Called for each error of a request after its response arrived (the connection reset while the body
   * was still being sent): the response's reader sees the exchange's end, and nothing is left to answer.
   */
  lateError?: () => void;
}

export interface UpstreamRequest {
  method: string;
  /** End-to-end header lines, in the client's order. */
  headers: readonly [string, string][];
  body: Uint8Array;
  signal: UpstreamAbort;
}

/**
 * What aborts an exchange: an AbortSignal, or the forwarder's ExchangeAbort. The exchange takes its
 * `onabort`, the one listener it needs.
 */
interface UpstreamAbort {
  readonly aborted: boolean;
  readonly reason: unknown;
  onabort: ((event: never) => unknown) | null;
}

/**
 * An exchange's abort, as an AbortController's signal would carry it, without the controller: no
 * EventTarget, no listener list, no AbortSignal handed to Node's client for every request. Aborted
 * once, with a reason; its one listener (`onabort`, the upstream request's) called then.
 */
export class ExchangeAbort implements UpstreamAbort {
  aborted = false;
  reason: unknown = undefined;
  onabort: (() => unknown) | null = null;

  abort(reason: Error): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listener = this.onabort;
    this.onabort = null;
    listener?.();
  }
}

/** Where one request goes: its URL as text, and Node's request options for it (a URL object's, made without one). */
export interface UpstreamTarget {
  readonly href: string;
  readonly https: boolean;
  /** Node's options for the URL, as `urlToHttpOptions` gives them (no method, headers or agent). */
  readonly options: RequestOptions;
}

/**
 * A path and query whose URL, appended to an origin, serializes as written: no byte the URL parser
 * percent-encodes or rewrites (a backslash, a space, quotes, angle brackets, braces, `%` sequences, a
 * fragment), no dot segment, no empty query (`URL` sends `/?` as `/`). Anything else goes through `URL`.
 */
const PLAIN_TARGET = /^\/[A-Za-z0-9\-_~!$&'()*+,;=:@./]*(?:\?[A-Za-z0-9\-_~!$&()*+,;=:@./?]+)?$/;
const DOT_SEGMENT = /\/\.\.?(?:[/?]|$)/;

/**
 * A plain target's options: the origin's with its path, made by a literal of fixed keys. Not
 * `{ ...base, path }`: V8 gives a spread's copy a hidden class outside the transition tree, so adding
 * `path` to it made a new hidden class at every request, and every function that read the options
 * (Node's request and agent code) saw a new one each time, with its optimised code thrown away and
 * compiled again long after start.
 */
function plainOptions(base: RequestOptions, path: string): RequestOptions {
  const { protocol, hostname, port } = base;
  return port !== undefined ? { protocol, hostname, port, path } : { protocol, hostname, path };
}

/**
 * The upstream request targets of one upstream: a client's origin-form target appended to the
 * upstream's origin, never resolved against it (`//host/x` or `/\\host/x` resolved as a URL reference
 * names another host, and the gateway would be an open proxy). A plain target's URL is the text itself,
 * its options the origin's with its path; any other is parsed as `new URL(origin + target)`.
 */
export class UpstreamTargets {
  private readonly origin: string;
  private readonly https: boolean;
  private readonly base: RequestOptions | undefined;

  constructor(upstream: URL) {
    this.origin = upstream.origin;
    this.https = upstream.protocol === 'https:';
    // Credentials in the upstream's URL go through `URL` each time (Node makes them an Authorization header).
    this.base =
      upstream.username === '' && upstream.password === ''
        ? (({ protocol, hostname, port }) => ({ protocol, hostname, ...(port !== undefined ? { port } : {}) }))(
            urlToHttpOptions(upstream),
          )
        : undefined;
  }

  of(target: string): UpstreamTarget {
    if (this.base !== undefined && PLAIN_TARGET.test(target) && !DOT_SEGMENT.test(target))
      return { href: this.origin + target, https: this.https, options: plainOptions(this.base, target) };
    const url = new URL(this.origin + target);
    return { href: url.href, https: url.protocol === 'https:', options: urlToHttpOptions(url) };
  }
}

/** What sending a request once more needs. */
interface Retry {
  target: UpstreamTarget;
  request: UpstreamRequest;
  headers: OutgoingHttpHeaders | string[];
}

/**
 * Sends a client's request to the upstream with Node's own HTTP client and hands back the response as
 * it arrives: no decoding (the client gets the upstream's bytes and Content-Encoding), no redirects
 * followed, every header line kept. The caller reads the body as a Node stream, pausing it while its
 * client is slow, so a slow client holds the upstream back (TCP flow control) instead of growing the
 * gateway's memory. Aborting the signal destroys the exchange.
 *
 * Idle connections are pooled and closed before the upstream's announced keep-alive timeout
 * (`upstream-agent.ts`). A request whose pooled connection turns out dead before the request's first
 * byte was handed to it is sent once more, on a connection of its own.
 */
export class UpstreamClient {
  private readonly httpAgent = new HttpUpstreamAgent();
  private readonly httpsAgent: HttpsUpstreamAgent;
  private readonly ca: string | undefined;
  private readonly lateError: () => void;

  constructor(options: UpstreamOptions = {}) {
    this.ca = options.ca;
    this.lateError = options.lateError ?? ignore;
    this.httpsAgent = new HttpsUpstreamAgent(options.ca);
  }

  send(url: URL | UpstreamTarget, request: UpstreamRequest): Promise<IncomingMessage> {
    const target =
      url instanceof URL ? { href: url.href, https: url.protocol === 'https:', options: urlToHttpOptions(url) } : url;
    return this.exchange(target, request, headerLines(request.headers, target.options.auth === undefined), false);
  }

  private exchange(
    target: UpstreamTarget,
    request: UpstreamRequest,
    headers: OutgoingHttpHeaders | string[],
    again: boolean,
  ): Promise<IncomingMessage> {
    const https = target.https;
    const { method, signal } = request;
    // The request as a retry needs it (its target and joined header lines too), dropped once the upstream
    // answers: the closures below live as long as the response (a stream may stay open for hours) and
    // must keep neither the body nor the header lines. Only the first send may be retried.
    let retry: Retry | undefined = again ? undefined : { target, request, headers };
    let body: Uint8Array | undefined = request.body.byteLength > 0 ? request.body : undefined;
    return new Promise<IncomingMessage>((resolve, reject) => {
      // Copied by Object.assign and written field by field, not `{ ...target.options, method, ... }`:
      // the spread's copy has a hidden class outside the transition tree, and each field added to it
      // made a new one at every request (see plainOptions).
      const options: HttpsRequestOptions = Object.assign({}, target.options);
      options.method = method;
      options.headers = headers;
      // The retry never takes another pooled connection, which may be as stale as the first.
      options.agent = again ? false : https ? this.httpsAgent : this.httpAgent;
      if (again && https && this.ca) options.ca = this.ca;
      const req = (https ? httpsRequest : httpRequest)(options);
      abortWith(req, signal);
      // Whether the request may be sent again: only if its connection was a pooled one, and the socket
      // took no byte of the request (`bytesWritten` counts what was handed to it, sent or queued) and
      // gave no byte of an answer. That is all Node can tell, and it is enough: nothing of the request
      // left the gateway. It holds when the connection was found closed before the request reached it
      // (the upstream's close read just before, the socket ended or destroyed while still in the pool).
      // Once a byte is handed over, the upstream may have read the request and acted on it (a
      // tools/call, any POST) before the connection broke, and a second send could run it twice. So the
      // usual race, a request written as the upstream closes the idle connection, is not retried: the
      // agents close idle connections before the upstream does, which keeps it from happening.
      let untouched = (): boolean => false;
      req.once('socket', (socket) => {
        if (!req.reusedSocket || again) return;
        const written = socket.bytesWritten;
        const read = socket.bytesRead;
        if (typeof written !== 'number' || typeof read !== 'number') return;
        untouched = () => socket.bytesWritten === written && socket.bytesRead === read;
      });
      const failed = (error: Error): void => {
        const first = retry;
        retry = undefined;
        if (first && untouched() && !signal.aborted)
          this.exchange(first.target, first.request, first.headers, true).then(resolve, reject);
        else reject(error);
      };
      req.once('error', failed);
      req.once('response', (res) => {
        retry = undefined;
        req.off('error', failed);
        // Later errors of the exchange reach the response (its 'error' or an incomplete 'close'); counted.
        countLateErrors(req, signal, this.lateError);
        releaseUnsentBody(req, res);
        if (!again) noteKeepAlive(res.socket, res.headers['keep-alive']);
        resolve(res);
      });
      req.end(body);
      body = undefined;
      dropHeaderLines(req);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

/**
 * As Node's client does with a `signal`: an abort destroys the exchange, before or after its answer. A
 * function of its own: its two closures live as long as the response (a stream may stay open for
 * hours), and made in `exchange`'s promise they kept that scope and the one around it, with the
 * exchange's target and its options object, the joined header lines, the promise and its resolving
 * functions and the retry's closures (about 0.8 KB a stream, by heap snapshots; the gateway benchmark
 * measures the heap per open stream).
 */
function abortWith(req: ClientRequest, signal: UpstreamAbort): void {
  const abort = (): void => {
    req.destroy(Object.assign(new Error('The operation was aborted'), { name: 'AbortError', cause: signal.reason }));
  };
  if (signal.aborted) process.nextTick(abort);
  else {
    signal.onabort = abort;
    // Done with, the exchange leaves the abort alone (its socket may serve another request by then).
    // `on`, not `once`: a request closes once, and `once` makes a wrapper, its state and a bound
    // function that stay for the response's life.
    req.on('close', () => {
      if (signal.onabort === abort) signal.onabort = null;
    });
  }
}

/**
 * Ends the request once its response is over if its body is not all sent. An upstream that answers
 * before it has read the body (an authentication layer's 401, often) may never read the rest, and
 * Node keeps what it could not send, the whole body maybe (4 MiB), in the connection's write queue,
 * and the connection open, until the upstream reads it or closes: for as long as the upstream
 * likes, for every such request. The connection could serve no other request anyway (Node frees it
 * only once the body is sent). A function of its own, so that the listener keeps no scope of `exchange`.
 */
function releaseUnsentBody(req: ClientRequest, res: IncomingMessage): void {
  res.on('end', () => {
    if (!req.writableFinished) req.destroy();
  });
}

/** Counts the request's errors after its response arrived, but for the one its own abort makes (`abortWith`). */
function countLateErrors(req: ClientRequest, signal: UpstreamAbort, lateError: () => void): void {
  req.on('error', () => {
    if (!signal.aborted) lateError();
  });
}

/** A listener that keeps an error from being thrown, for an error another listener reports. */
function ignore(): void {}

/** Node's own key of a request's header lines by name (`OutgoingMessage`'s `kOutHeaders`); null when it has none. */
let outHeaders: symbol | null | undefined;

/**
 * Drops Node's by-name copy of an ended request's header lines. Node built the request's head from it
 * when the request was ended (its `_header` text, which is what is written) and reads it after only
 * for `getHeader` and its kin, which nothing calls on an upstream request once it is ended; kept, it
 * would stay for as long as the response streams, hours maybe. A Node without that key keeps it.
 */
function dropHeaderLines(req: ClientRequest): void {
  const header = (req as unknown as { _header?: unknown })._header;
  if (typeof header !== 'string') return;
  outHeaders ??= Object.getOwnPropertySymbols(req).find((key) => key.description === 'kOutHeaders') ?? null;
  if (outHeaders !== null) (req as unknown as Record<symbol, unknown>)[outHeaders] = null;
}

/**
 * The header lines as Node's client takes them: a repeated field joined into one line, its name
 * matched in any case and spelled as on its first line. `Cookie` lines are joined with "; ", the one
 * separator its grammar allows (RFC 6265 5.4, as RFC 9113 8.2.3 joins HTTP/2's split cookies), every
 * other field with ", " (RFC 9110 5.3).
 *
 * As a flat list (`rawHeaders`' shape) when `asList` and the lines carry a Content-Length: Node's client
 * then writes them as they are, in order, without a `setHeader` (a validation, a lower-casing and a
 * by-name entry) for each. The same head either way: with a length Node adds no framing of its own, and
 * the caller has no credentials for Node to add (`auth`, which Node reads only from an object's lines). A
 * request without a length (a GET) takes the object, where Node frames an empty body as it always did.
 */
/** Header lines up to which a repeated name is looked for along the list (`headerLines`). */
const MAX_SCANNED_LINES = 32;

function headerLines(lines: readonly [string, string][], asList: boolean): OutgoingHttpHeaders | string[] {
  const count = lines.length;
  // `list` holds each distinct name's first spelling and its value at twice its index (rawHeaders'
  // shape), made straight from the lines at its full size and cut to what it holds: no pair per line,
  // no iterator, no growing. A repeated name is found by a look along the few lower-cased names so far;
  // among many (Node takes up to 2,000 lines), by a map, so that a hostile request's cost stays linear.
  const many = count > MAX_SCANNED_LINES ? new Map<string, number>() : undefined;
  const lower = many === undefined ? new Array<string>(count) : undefined;
  const list = new Array<string>(2 * count);
  let names = 0;
  let length = false;
  for (let i = 0; i < count; i++) {
    const line = lines[i]!;
    const name = line[0];
    const value = line[1];
    const key = name.toLowerCase();
    let at = -1;
    if (lower === undefined) at = many!.get(key) ?? -1;
    else
      for (let j = 0; j < names; j++)
        if (lower[j] === key) {
          at = j;
          break;
        }
    if (at === -1) {
      if (lower === undefined) many!.set(key, names);
      else lower[names] = key;
      list[2 * names] = name;
      list[2 * names + 1] = value;
      names++;
      if (key === 'content-length') length = true;
    } else list[2 * at + 1] = `${list[2 * at + 1]!}${key === 'cookie' ? '; ' : ', '}${value}`;
  }
  list.length = 2 * names;
  if (asList && length) return list;
  const headers: OutgoingHttpHeaders = {};
  for (let i = 0; i < list.length; i += 2) headers[list[i]!] = list[i + 1]!;
  return headers;
}
