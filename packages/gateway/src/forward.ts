import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { unexpectedErrorLine } from '@resumewatch/daemon';
import { InvalidResumptionError } from '@resumewatch/guard';
import { GatewayRefusal, GuardAction, HEADER_TASK_ID } from '@resumewatch/semconv';
import type { HostCheck } from '@resumewatch/daemon';
import { HEADER_SESSION_ID, parseJsonBody } from '@resumewatch/wire';
import type { PushedBody, StreamRecord, WireRequest } from '@resumewatch/wire';
import { askIdentity } from './accept-encoding.js';
import { answer } from './answers.js';
import { batchOver } from './batch-size.js';
import { RateLimitedLog } from './error-log.js';
import type { ClientIdentities, ClientIdentity } from './client-identity.js';
import type { GatewayCounts } from './counts.js';
import type { Observation } from './observation.js';
import { ReceiptProofs, viaIntermediary, type ConnectionReceipts } from './receipt-proof.js';
import { pushForwardingHeaders } from './forwarded.js';
import { endToEndRequestHeaders, endToEndResponseHeaders } from './hop-by-hop.js';
import { endAfterRefusal, readBody, refusedBodyMessage, type BodyLimits } from './request-body.js';
import { SseHeartbeat } from './sse-heartbeat.js';
import { createdTaskId, readTaskCall, type TaskCall } from './task-messages.js';
import type { TaskHandles } from './task-handles.js';
import { beginInClientContext, traceContextFields } from './trace-context.js';
import { ExchangeAbort, UpstreamTargets, type UpstreamClient } from './upstream.js';

export interface ForwarderLimits extends BodyLimits {
  /** Exchanges open at once (503 above). */
  maxStreams: number;
  /** Time the upstream has to send its response headers (504 after). */
  upstreamTimeoutMs: number;
  /** Time an open exchange may carry no byte in either direction before it is closed; 0: never. */
  streamIdleTimeoutMs: number;
  /** A request body of more JSON-RPC messages is forwarded unobserved, its response too; 0: no cap. */
  maxBatchMessages: number;
  /** An SSE response quiet this long gets a comment line between its events (--sse-heartbeat); 0: never. */
  sseHeartbeatMs: number;
}

/** Why the gateway aborted an upstream exchange. */
const CLIENT_GONE = 'client_gone';

/**
 * Forwards one client's HTTP exchange to the upstream, observed on the wire observer, and the answer
 * back: status, end-to-end headers, and the body chunk by chunk as it arrives, written only as fast as
 * the client takes it.
 */
export class Forwarder {
  private readonly receipts: ReceiptProofs;
  private readonly targets: UpstreamTargets;
  /** --upstream-timeout: also how long a keyed task call's answer is read on without its client. */
  get upstreamTimeoutMs(): number {
    return this.limits.upstreamTimeoutMs;
  }
  /** The internal_error lines: at most 10 a minute, then one line with how many more (every one counted). */
  private readonly errorLog = new RateLimitedLog((line) => process.stderr.write(line), 'internal error lines');

  constructor(
    private readonly upstream: URL,
    private readonly observation: Observation,
    private readonly client: UpstreamClient,
    private readonly limits: ForwarderLimits,
    readonly counts: GatewayCounts,
    /** The guard may remove events from SSE bodies (--enforce): their length is not the upstream's. */
    private readonly filtering: boolean,
    /** The `Host` and `Origin` the gateway answers (--allowed-hosts, --allowed-origins). */
    private readonly hosts: HostCheck,
    /** Who sent each request: its address, and the scope a 2026-07-28 re-issue is matched in. */
    private readonly clients: ClientIdentities,
    /** A connection's next request may prove its client read the previous response (--trust-connection-reuse). */
    connectionProof: boolean,
    /** With --enforce: the live tasks keyed calls created, for a repeat of such a call (task-handles.ts). */
    private readonly taskHandles?: TaskHandles,
  ) {
    this.receipts = new ReceiptProofs(observation.observer, connectionProof);
    this.targets = new UpstreamTargets(upstream);
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    const method = req.method ?? 'GET';
    // Before the request is judged: what this connection's earlier responses carried is proven received.
    const connection = this.receipts.requestArrived(req.socket, viaIntermediary(req.headers));
    const exchange = new Exchange(this, res, method, connection);
    // One listener of each kind for the whole exchange (see `Exchange`). `on`, not `once`: a response
    // finishes and closes once, and each `once` makes a wrapper, its state and a bound function that
    // stay as long as the response (about 0.2 KB each, for hours maybe on a stream).
    res.on('finish', exchange.finished);
    // A pipelined request's response waits behind the connection's earlier ones, and Node never closes it
    // when the connection dies (no socket was ever given to it): closed here, or the exchange would hold
    // its --max-streams slot and its upstream stream for good.
    if (connection.open > 1) exchange.queuedOn = closeQueuedWithConnection(req.socket, res);
    res.on('close', exchange.closed);
    this.forward(req, res, method, exchange).catch((e: unknown) => {
      // A defect of the gateway, never the client's: the connection ends rather than the process. The
      // client is told nothing of the gateway's insides; the detail is one line on stderr, and counted.
      this.errorLog.line(`resumewatch gateway: internal error: ${unexpectedErrorLine(e)}\n`);
      this.refuse(res, GatewayRefusal.INTERNAL_ERROR, 'internal error (the gateway logged it)', { method });
    });
  }

  /** The response is written whole (Node's `finish`). */
  responseFinished(exchange: Exchange): void {
    this.receipts.responseOver(exchange.connection, exchange.stream, true);
  }

  /** The response is closed, written whole or not. */
  responseClosed(exchange: Exchange): void {
    const res = exchange.res;
    if (!exchange.finishedWhole) this.receipts.responseOver(exchange.connection, exchange.stream, false);
    this.counts.exchangeEnded(exchange.method, res.headersSent ? res.statusCode : undefined);
  }

  /** The idle timer's end: no byte for --stream-idle-timeout. */
  idleExpired(exchange: Exchange): void {
    const res = exchange.res;
    this.counts.refused(GatewayRefusal.STREAM_IDLE);
    exchange.abort.abort(abortReason(GatewayRefusal.STREAM_IDLE));
    if (res.headersSent) res.destroy();
    else
      answer(
        res,
        GatewayRefusal.STREAM_IDLE,
        `no byte for ${this.limits.streamIdleTimeoutMs} ms (--stream-idle-timeout)`,
        {
          id: exchange.answeredId,
          method: exchange.method,
        },
      );
  }

  exchangeClosed(): void {
    this.counts.closed();
  }

  /** --sse-heartbeat: 0 when off. */
  get sseHeartbeatMs(): number {
    return this.limits.sseHeartbeatMs;
  }

  /** An upstream error after its exchange's response was over (pump). */
  lateUpstreamError(): void {
    this.counts.lateUpstreamError();
  }

  private refuse(
    res: ServerResponse,
    refusal: GatewayRefusal,
    message: string,
    options?: Parameters<typeof answer>[3],
  ) {
    this.counts.refused(refusal);
    answer(res, refusal, message, options);
  }

  /**
   * The request described to the observer, in the client's trace context. A method of its own, so that
   * no closure of `forward` captures the body: each would keep it for as long as the stream is open.
   */
  private begin(
    req: IncomingMessage,
    href: string,
    method: string,
    headers: [string, string][],
    body: Uint8Array,
    /**
     * Who sent it (`ClientIdentities`): a 2026-07-28 re-issue is matched among that client's requests
     * (its scope); a sessionless listening stream's re-opens are counted per client (its address).
     */
    client: ClientIdentity,
  ): { request: WireRequest; joined: boolean } {
    const { result, joined } = beginInClientContext(req.headers, () =>
      // Two literals, not a spread of `{ body }` or `{}`: a spread copies through the runtime and makes an object more.
      this.observation.begin(href, body.byteLength > 0 ? { method, headers, body } : { method, headers }, client),
    );
    return { request: result, joined };
  }

  /**
   * Refuses a request before its body is read: the answer, then the rest of the body read and thrown
   * away within the body's bounds (so the client reads the answer), then the connection closed.
   */
  private refuseUnread(
    req: IncomingMessage,
    res: ServerResponse,
    refusal: GatewayRefusal,
    message: string,
    method: string,
  ): void {
    this.refuse(res, refusal, message, {
      method,
      headers: { connection: 'close' },
      end: endAfterRefusal(req, res, { read: 0 }, this.limits),
    });
  }

  private async forward(req: IncomingMessage, res: ServerResponse, method: string, exchange: Exchange): Promise<void> {
    // A rebound name (DNS rebinding) or a foreign page's request never reaches the upstream, whose
    // own Host check sees the upstream's name once the gateway has replaced it.
    const refused = this.hosts(req.headers.host, req.headers.origin);
    if (refused) return this.refuseUnread(req, res, refused.reason, refused.message, method);
    const target = req.url ?? '/';
    if (method === 'CONNECT' || !target.startsWith('/'))
      return this.refuseUnread(
        req,
        res,
        GatewayRefusal.NOT_PROXIED,
        `forwards only to its upstream; send an origin-form request (a path), not ${method === 'CONNECT' ? 'CONNECT' : 'an absolute URL'}`,
        method,
      );
    // The exchange's close aborts it (`Exchange.closed`); its idle timer answers or ends it. The request's
    // JSON-RPC id is kept on the exchange once known, for a 504 of the idle timer: never the body, the
    // exchange lives as long as the response, and a stream may stay open for hours.
    const controller = exchange.abort;
    exchange.listening = true;
    if (this.limits.streamIdleTimeoutMs > 0) exchange.watchIdle(this.limits.streamIdleTimeoutMs, idleExpired);

    // The body before an exchange slot: a slow upload holds a connection (--max-connections) for at most
    // --body-timeout, never one of the --max-streams exchanges; each byte of it keeps the idle timer off.
    // `read` and `body` are let, cleared once the body is handed to the upstream: an async function keeps
    // its locals in its suspended frame while it waits for the upstream's headers.
    let read: Awaited<ReturnType<typeof readBody>> | undefined = await readBody(req, this.limits, exchange.active);
    // Gone, or answered by the idle timer while its body was still coming (a body left unread ends the connection).
    if ('gone' in read || res.writableEnded || res.destroyed) {
      exchange.stopIdle();
      if ('refused' in read) res.destroy();
      return;
    }
    if ('refused' in read) {
      exchange.stopIdle();
      return this.refuse(res, read.refused, refusedBodyMessage(read.refused, this.limits), {
        method,
        headers: { connection: 'close' },
        end: endAfterRefusal(req, res, read, this.limits),
      });
    }
    let body: Uint8Array | undefined = read.body;
    // Read by nothing later, and that is the point: the suspended frame must not keep the body (above).
    // eslint-disable-next-line no-useless-assignment
    read = undefined;
    const client = this.clients.of(req);
    // A call that may be answered with a task (task-messages.ts; a byte search keeps most bodies unparsed):
    // its JSON answer is held whole to name the task it created (HEADER_TASK_ID), and with --enforce a
    // repeat of a keyed one whose task is live is answered with that task's handle.
    const taskCall = readTaskCall(body);
    if (taskCall?.key !== undefined && this.taskHandles !== undefined) {
      const session = req.headers[HEADER_SESSION_ID];
      const kept = this.taskHandles.repeatFor(
        client.scope,
        typeof session === 'string' ? session : undefined,
        taskCall.key,
        taskCall.name,
      );
      if (kept !== undefined) {
        exchange.stopIdle();
        return repeatHandle(res, taskCall, kept);
      }
      // Its answer may create a task whose handle a repeat must get: read even if its client leaves first.
      exchange.keepReading = true;
    }
    // 2025-11-25: a client's disconnection is no cancellation (the server runs on and creates the task), so a
    // task-augmented call's answer is read on without its client, in either mode: the task it created is
    // then seen (the first attempt's task), and the call's re-issue is reported as the second task it makes.
    if (taskCall?.augmented) exchange.keepReading = true;
    if (this.counts.open >= this.limits.maxStreams) {
      exchange.stopIdle();
      return this.refuse(
        res,
        GatewayRefusal.TOO_MANY_STREAMS,
        `${this.limits.maxStreams} exchanges open (--max-streams); retry shortly`,
        { id: singleRequestId(body), method, headers: { 'retry-after': '1' } },
      );
    }
    this.counts.opened();
    exchange.counted = true;
    exchange.active();

    const headers = endToEndRequestHeaders(req.rawHeaders, req.headers);
    if (body.byteLength > 0 || req.headers['content-length'] !== undefined)
      headers.push(['content-length', String(body.byteLength)]);
    headers.push(['host', this.upstream.host]);
    // Enforcing, the guard must read what it forwards: bodies unencoded (accept-encoding.ts says what that costs).
    if (this.filtering) askIdentity(headers);
    // The client's Host, its scheme and address, which the upstream no longer sees (forwarded.ts).
    pushForwardingHeaders(headers, req, client.address);
    // The target appended to the upstream's origin, never resolved against it: `//host/x` or `/\host/x`
    // resolved as a URL reference names another host, and the gateway would be an open proxy.
    const url = this.targets.of(target);
    const observer = this.observation.observer;
    // A batch of more messages than --max-batch-messages goes unobserved, and its response with it (no
    // record, so no message of the response is of an unknown request): observed, each message would
    // be a record, a span and a timer before the upstream answers. Counted, never refused. `request`
    // is undefined too when observing the request threw (a defect, counted): the exchange then goes on
    // unobserved, forwarded as it came, rather than refused with internal_error.
    const unobserved = this.limits.maxBatchMessages > 0 && batchOver(body, this.limits.maxBatchMessages);
    let request: WireRequest | undefined;
    let joined = false;
    if (unobserved) this.counts.unobservedBatch();
    else
      try {
        ({ request, joined } = this.begin(req, url.href, method, headers, body, client));
      } catch (e) {
        if (!(e instanceof InvalidResumptionError)) this.counts.observationFailed(e);
        else {
          exchange.stopIdle();
          // Answered as a server with no stream here answers a GET: the client's SDK stops resuming.
          return answer(res, GuardAction.RESUME_REFUSED, 'request already delivered its result', {
            method,
            headers: { allow: 'POST, DELETE' },
          });
        }
      }
    exchange.answeredId = request === undefined ? null : oneRequestId(request);
    // The gateway's request span as the upstream's parent (its `traceparent`): in place of the client's
    // when that span is the client span's child, else only when the client sent none. A request the
    // gateway has no span for (a notification, a GET, an unobserved batch) keeps the client's.
    const fields = joined ? traceContextFields() : [];
    const clientFree = joined ? headers.filter(([name]) => !fields.includes(name.toLowerCase())) : headers;
    let traceContext: [string, string][] | undefined;
    try {
      traceContext = request === undefined ? undefined : observer.addedHeaders(request, clientFree);
    } catch (e) {
      this.counts.observationFailed(e);
    }
    if (traceContext) {
      if (clientFree !== headers) headers.splice(0, headers.length, ...clientFree);
      for (const line of traceContext) headers.push(line);
    }
    const timeout = setTimeout(upstreamTimedOut, this.limits.upstreamTimeoutMs, controller);
    timeout.unref();
    let upstream: IncomingMessage;
    try {
      const sending = this.client.send(url, { method, headers, body, signal: controller });
      body = undefined;
      upstream = await sending;
    } catch (e) {
      exchange.stopIdle();
      const aborted = controller.aborted;
      try {
        if (request !== undefined) observer.proxyFailed(request, aborted ? controller.reason : e);
      } catch (failure) {
        this.counts.observationFailed(failure);
      }
      const id = exchange.answeredId;
      if (aborted) {
        const reason = (controller.reason as Error).message;
        if (reason === GatewayRefusal.UPSTREAM_TIMEOUT)
          return this.refuse(
            res,
            GatewayRefusal.UPSTREAM_TIMEOUT,
            `no answer from the upstream within ${this.limits.upstreamTimeoutMs} ms (--upstream-timeout)`,
            { id, method },
          );
        return; // the client left, or the idle timer answered
      }
      return this.refuse(
        res,
        GatewayRefusal.UPSTREAM_UNREACHABLE,
        `upstream ${this.upstream.origin} unreachable: ${describe(e)}`,
        { id, method },
      );
    } finally {
      clearTimeout(timeout);
    }
    const status = upstream.statusCode ?? 502;
    let observed: PushedBody | undefined;
    try {
      observed =
        request === undefined
          ? undefined
          : observer.proxyResponse(request, status, upstream.headers, hasBody(method, status));
    } catch (e) {
      // A defect of observation: the response goes to the client unobserved, counted.
      this.counts.observationFailed(e);
    }
    if (res.destroyed) {
      if (exchange.keepReading) return drainForHandle(upstream, observed, exchange, [], false);
      observed?.fail(abortReason(CLIENT_GONE));
      upstream.destroy();
      return;
    }
    exchange.stream = observed?.stream;
    // A body the guard may shorten never carries the upstream's length: Node frames it (chunked, or the
    // connection's close for an HTTP/1.0 client), so a keep-alive connection stays in step.
    const filtered = this.filtering && observed?.stream.format === 'sse';
    const head = endToEndResponseHeaders(upstream.rawHeaders, filtered);
    if (taskCall !== undefined && hasBody(method, status) && isJson(upstream))
      return holdTaskAnswer(upstream, exchange.active, (held, ended, error) => {
        // The upstream's own task header never passes (hop-by-hop.ts): only the gateway names a task.
        const named = head;
        const taskId = ended ? createdTaskId(Buffer.concat(held)) : undefined;
        if (taskId !== undefined) named.push(HEADER_TASK_ID, taskId);
        // The client left while the answer was held: a keyed task call's answer is observed whole all the same.
        if (res.destroyed && exchange.keepReading && ended)
          return drainForHandle(upstream, observed, exchange, held, true);
        // The client left, or the idle timer answered, while the answer was held.
        if (res.destroyed || res.headersSent) {
          observed?.fail(exchange.abort.aborted ? exchange.abort.reason : (error ?? abortReason(CLIENT_GONE)));
          upstream.destroy();
          return;
        }
        try {
          res.writeHead(status, upstream.statusMessage, named);
        } catch (e) {
          exchange.stopIdle();
          observed?.fail(e);
          upstream.destroy();
          this.counts.observationFailed(e);
          res.destroy();
          return;
        }
        pump(upstream, observed, res, exchange, held, ended);
        // Broken while held: the client's response breaks as pump breaks it (observed as failed).
        if (error !== undefined) exchange.broken?.(error);
      });
    try {
      res.writeHead(status, upstream.statusMessage, head);
    } catch (e) {
      // A response Node will not relay (a status below 100): the exchange ends here, the upstream's
      // connection and the idle timer with it, and the caller answers internal_error.
      exchange.stopIdle();
      observed?.fail(e);
      upstream.destroy();
      throw e;
    }
    // Headers now, not with the first chunk: an SSE client waits for them before anything else. A JSON
    // body's go out with its first bytes, in one write (a flush of their own is one more write a request).
    if (observed?.stream.format !== 'json') res.flushHeaders();
    // Not awaited: this frame ends here, and holds nothing while the body streams (for hours maybe). The
    // idle timer stops when the response is over (`Exchange`).
    pump(upstream, observed, res, exchange);
  }
}

/**
 * Copies the body to the client chunk by chunk as it arrives, through the observer when it is JSON or
 * SSE, pausing the upstream while the client has not taken what was written. An upstream that breaks
 * mid-body breaks the client's response (never a clean end). The terminals it carried count as
 * received only on the client's proof (its cursor, or its next request on the connection: `handle`).
 */
function pump(
  upstream: IncomingMessage,
  observed: PushedBody | undefined,
  res: ServerResponse,
  exchange: Exchange,
  /** Chunks already read (holdTaskAnswer), written first. */
  held: Buffer[] = [],
  /** The upstream's body already ended (holdTaskAnswer read it whole). */
  alreadyEnded = false,
): void {
  const controller = exchange.abort;
  const counts = exchange.forwarder.counts;
  // --sse-heartbeat: only for an event stream, and no timer at all when the option is off.
  const heartbeatMs = exchange.forwarder.sseHeartbeatMs;
  const heartbeat =
    heartbeatMs > 0 && isEventStream(upstream) ? new SseHeartbeat(res, heartbeatMs, counts.heartbeat) : undefined;
  const sink = heartbeat
    ? {
        enqueue(bytes: Uint8Array): void {
          if (res.destroyed) return;
          bytes = heartbeat.upstreamBytes(bytes);
          heartbeat.wrote(bytes);
          if (!res.write(bytes)) upstream.pause();
        },
      }
    : {
        enqueue(bytes: Uint8Array): void {
          // Gone: a keyed task call's answer read on without its client (Exchange.keepReading).
          if (res.destroyed) return;
          if (!res.write(bytes)) upstream.pause();
        },
      };
  res.on('drain', () => upstream.resume());
  if (heartbeat) res.on('close', heartbeat.stop);
  const active = exchange.active;
  // The observed body stands aside by itself when observing it throws (PushedBody). Should that fail as
  // well, the exception still never reaches these emitter handlers (it would end the process): counted,
  // and the client's response is cut rather than given bytes that may not be the upstream's.
  let failed = false;
  const observationFailed = (error: unknown): void => {
    failed = true;
    counts.observationFailed(error);
    res.destroy();
    upstream.destroy();
  };
  const onData = observed
    ? (chunk: Buffer) => {
        active();
        if (failed) return;
        try {
          observed.chunk(chunk, sink);
        } catch (error) {
          observationFailed(error);
        }
      }
    : (chunk: Buffer) => {
        active();
        sink.enqueue(chunk);
      };
  upstream.on('data', onData);
  for (const chunk of held) onData(chunk);
  // `on`, not `once` (as `handle` puts the response's): the upstream response ends, fails and closes
  // once, and `broken` runs at most once whatever is emitted.
  let ended = false;
  const onEnd = (): void => {
    ended = true;
    heartbeat?.stop();
    // Read on without its client (Exchange.keepReading): its time bound ends with the body.
    if (res.destroyed) exchange.stopIdle();
    // The client's response ends before the body's end is observed: a chunked JSON body's last chunk
    // (most servers send JSON chunked) does not wait for its parse, spans and detection.
    if (observed === undefined) res.end();
    else if (!failed) {
      try {
        observed.end(sink, res);
      } catch (error) {
        if (res.writableEnded) counts.observationFailed(error);
        else observationFailed(error);
      }
    }
  };
  if (alreadyEnded) onEnd();
  else upstream.on('end', onEnd);
  const broken = (error: unknown): void => {
    if (ended) return;
    ended = true;
    heartbeat?.stop();
    try {
      observed?.fail(controller.aborted ? controller.reason : error);
    } catch (failure) {
      counts.observationFailed(failure);
    }
    res.destroy();
    exchange.stopIdle();
  };
  upstream.on('error', (error: unknown) => {
    // Once the body ended or broke, an error has nothing left to break: counted (never thrown, never
    // silent), unless it is the one the exchange's own abort makes.
    if (ended) {
      if (!controller.aborted) exchange.forwarder.lateUpstreamError();
    } else broken(error);
  });
  upstream.on('close', () => {
    if (!upstream.complete)
      broken(Object.assign(new Error('upstream closed the response early'), { code: 'ECONNRESET' }));
  });
  // The client left: the exchange's close aborted it first (which destroys the upstream response); the
  // body ends as aborted.
  exchange.broken = broken;
}

/**
 * One exchange's state, read by the one \`finish\` and the one \`close\` listener its response carries
 * and by its idle timer, in the order the forwarder's steps once put their own listeners: the proof of
 * receipt's count, then the exchange's abort and idle timer, then its --max-streams slot, then the body's
 * pump. Fields, not closures of \`forward\`: what an open stream keeps is this object.
 */
class Exchange {
  /** The observed body's stream, once the response's headers are written: the connection's next request may prove it received. */
  stream: StreamRecord | undefined = undefined;
  /** Node's `finish`: the response was written whole. */
  finishedWhole = false;
  readonly abort = new ExchangeAbort();
  /**
   * The idle timer (--stream-idle-timeout; once the client left, --upstream-timeout): it looks
   * `IDLE_LOOKS` times an interval whether a byte moved (`active`), rather than being reset by each
   * chunk (a `refresh` reads the loop's clock and moves the timer in its list: some 600 instructions,
   * a tenth of the wire observer's work for a chunk of one SSE event).
   */
  private idle: ReturnType<typeof setInterval> | undefined = undefined;
  /** The idle timer's looks since the last byte moved (`active`). */
  quietLooks = 0;
  /** What the idle timer does when the exchange was silent for its interval. */
  idleOver: (exchange: Exchange) => void = idleExpired;
  /** The request's JSON-RPC id once known, for the idle timer's 504. */
  answeredId: string | number | null = null;
  /** The forwarder took the request past its Host check: the response's close aborts the exchange. */
  listening = false;
  /** The exchange holds one of the --max-streams slots. */
  counted = false;
  /** The body's pump, once it runs: the response closed before it was written whole. */
  broken: ((error: unknown) => void) | undefined = undefined;
  /** For a queued response (pipelining): stops watching the connection's close. */
  queuedOn: (() => void) | undefined = undefined;
  /**
   * A call that may create a task (keyed, with --enforce; or 2025-11-25's task-augmented call, in either
   * mode): a client that leaves before the answer's headers were written does not abort the upstream
   * exchange, whose answer is read and observed (`drainForHandle`), so that the task it created is known
   * to the client's repeat (the handle store) and to the detector (the re-issue's first attempt).
   */
  keepReading = false;
  /** The answer read on without its client is over (`drainForHandle`): nothing left to bound. */
  drained = false;
  private over = false;

  constructor(
    readonly forwarder: Forwarder,
    readonly res: ServerResponse,
    readonly method: string,
    readonly connection: ConnectionReceipts,
  ) {}

  /** Each byte either way keeps the idle timer off: a store, read by the timer's next look. */
  readonly active = (): void => {
    this.quietLooks = 0;
  };

  /**
   * Starts the idle timer (replacing any): `over` runs once no byte moved (`active`) for `ms`, at most
   * a quarter of it later, never sooner (it takes IDLE_LOOKS + 1 looks a quarter of `ms` apart, none
   * of them after a byte, the first of which may come at once after it).
   */
  watchIdle(ms: number, over: (exchange: Exchange) => void): void {
    clearInterval(this.idle);
    this.quietLooks = 0;
    this.idleOver = over;
    this.idle = setInterval(idleLook, Math.ceil(ms / IDLE_LOOKS), this);
    this.idle.unref();
  }

  /** The idle timer's look: over when IDLE_LOOKS + 1 looks in a row saw no byte. */
  looked(): void {
    if (++this.quietLooks <= IDLE_LOOKS) return;
    this.stopIdle();
    this.idleOver(this);
  }

  stopIdle(): void {
    clearInterval(this.idle);
    this.idle = undefined;
  }

  readonly finished = (): void => {
    this.finishedWhole = true;
    this.forwarder.responseFinished(this);
    if (this.broken) this.stopIdle();
  };

  readonly closed = (): void => {
    if (this.over) return;
    this.over = true;
    this.queuedOn?.();
    this.forwarder.responseClosed(this);
    const res = this.res;
    // A task call's answer is read on without its client (`keepReading`), within the upstream timeout; what
    // the observer reads of it from here on, no client received (StreamRecord.unwritten).
    const readOn = this.keepReading && !res.writableFinished && !this.drained;
    if (readOn && this.stream !== undefined) this.stream.unwritten = true;
    if (this.listening) {
      this.stopIdle();
      if (!res.writableFinished && !readOn) this.abort.abort(abortReason(CLIENT_GONE));
    }
    if (this.counted) this.forwarder.exchangeClosed();
    // Read on: the upstream's headers still awaited, its answer held or drained (`drainForHandle`), or its
    // body's pump going on, writing nothing (its sink drops what a gone client cannot take). In the idle
    // timer's place (stopped above), bounded by --upstream-timeout; the body's end or break stops it.
    if (readOn) this.watchIdle(this.forwarder.upstreamTimeoutMs, readTooLong);
    else if (this.broken && !res.writableFinished) this.broken(this.abort.reason);
  };
}

/** Largest JSON answer to a task call held whole before its headers go (a handle is a few hundred bytes). */
const MAX_HELD_TASK_ANSWER = 64 * 1024;

/**
 * Reads a JSON answer to a call that may create a task whole, at most 64 KiB, before its headers are
 * written, so that they can name the task it created (HEADER_TASK_ID: a load balancer routes the task's
 * follow-ups by it). The client reads a JSON body whole anyway; what it waits for is the rest of a body
 * it could not use before. Past 64 KiB, or when the body breaks, what was read is handed on at once and
 * the body goes on as any other (`pump`), with no header. `go` is called once, synchronously within the
 * upstream's event, so no chunk is missed between this reader's listeners and pump's.
 */
function holdTaskAnswer(
  upstream: IncomingMessage,
  active: () => void,
  go: (held: Buffer[], ended: boolean, error: unknown) => void,
): void {
  const held: Buffer[] = [];
  let size = 0;
  let settled = false;
  const settle = (ended: boolean, error?: unknown): void => {
    if (settled) return;
    settled = true;
    upstream.off('data', onData);
    upstream.off('end', onEnd);
    upstream.off('close', onClose);
    upstream.off('error', onError);
    // Within the upstream's event: pump's listeners go on before another chunk can come.
    go(held, ended, error);
  };
  const onData = (chunk: Buffer): void => {
    active();
    size += chunk.byteLength;
    held.push(chunk);
    if (size > MAX_HELD_TASK_ANSWER) {
      upstream.pause();
      settle(false);
      upstream.resume();
    }
  };
  const onEnd = (): void => settle(true);
  // Broken before its end: handed on with the error, which breaks the client's response as pump would.
  const onError = (error: unknown): void => settle(false, error);
  const onClose = (): void => {
    if (!upstream.complete)
      settle(false, Object.assign(new Error('upstream closed the response early'), { code: 'ECONNRESET' }));
  };
  upstream.on('data', onData);
  upstream.once('end', onEnd);
  upstream.once('close', onClose);
  upstream.on('error', onError);
}

/** Most bytes of an answer read for a client that left (`drainForHandle`): a task handle is a few hundred. */
const MAX_DRAINED_BYTES = 64 * 1024;

/**
 * The answer to a task call (keyed under --enforce, or 2025-11-25's augmented) whose client left before
 * its headers: read and observed with nothing written (the observer learns the task it created:
 * task-handles.ts, and the stream is `unwritten`), within 64 KiB and --upstream-timeout
 * (the exchange's timer, set when its client left: it aborts the exchange, which ends the upstream's
 * body), then the upstream exchange ends. The exchange gave back its --max-streams slot when its client left.
 */
function drainForHandle(
  upstream: IncomingMessage,
  observed: PushedBody | undefined,
  exchange: Exchange,
  held: Buffer[],
  ended: boolean,
): void {
  // Nothing of this answer reaches a client: what the observer reads of it, no client received.
  if (observed !== undefined) observed.stream.unwritten = true;
  if (observed === undefined) {
    exchange.drained = true;
    exchange.stopIdle();
    upstream.destroy();
    return;
  }
  const discard = { enqueue(): void {} };
  let size = 0;
  let over = false;
  const stop = (error: unknown): void => {
    if (over) return;
    over = true;
    exchange.drained = true;
    exchange.stopIdle();
    observed.fail(exchange.abort.aborted ? exchange.abort.reason : error);
    upstream.destroy();
  };
  const feed = (chunk: Buffer): void => {
    if (over) return;
    size += chunk.byteLength;
    if (size > MAX_DRAINED_BYTES) return stop(abortReason(CLIENT_GONE));
    observed.chunk(chunk, discard);
  };
  const finish = (): void => {
    if (over) return;
    over = true;
    exchange.drained = true;
    exchange.stopIdle();
    observed.end(discard);
  };
  for (const chunk of held) feed(chunk);
  if (ended) return finish();
  upstream.on('data', feed);
  upstream.once('end', finish);
  upstream.on('error', stop);
  upstream.once('close', () => {
    if (!upstream.complete)
      stop(Object.assign(new Error('upstream closed the response early'), { code: 'ECONNRESET' }));
  });
}

/** An SSE stream: the upstream's Content-Type says so. */
function isEventStream(upstream: IncomingMessage): boolean {
  const type = upstream.headers['content-type'];
  return typeof type === 'string' && type.trimStart().toLowerCase().startsWith('text/event-stream');
}

/** A JSON-RPC answer: the upstream's Content-Type says so. */
function isJson(upstream: IncomingMessage): boolean {
  const type = upstream.headers['content-type'];
  return typeof type === 'string' && type.trimStart().toLowerCase().startsWith('application/json');
}

/**
 * With --enforce, a repeat of a keyed task call whose task is live: the server's own creation answer,
 * under this request's id, and the task named for a load balancer; nothing goes upstream.
 */
function repeatHandle(res: ServerResponse, call: TaskCall, kept: { taskId: string; resultText: string }): void {
  const body = JSON.stringify({ jsonrpc: '2.0', id: call.id, result: JSON.parse(kept.resultText) as unknown });
  res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    [HEADER_TASK_ID]: kept.taskId,
  });
  res.end(body);
}

function idleExpired(exchange: Exchange): void {
  exchange.forwarder.idleExpired(exchange);
}

/** Looks of the idle timer an interval (Exchange.watchIdle): a stream is cut between 1 and 1.25 intervals of silence. */
const IDLE_LOOKS = 4;

function idleLook(exchange: Exchange): void {
  exchange.looked();
}

/** A keyed task call's answer read on without its client for longer than the upstream timeout: ended. */
function readTooLong(exchange: Exchange): void {
  exchange.abort.abort(abortReason(GatewayRefusal.UPSTREAM_TIMEOUT));
}

function upstreamTimedOut(controller: ExchangeAbort): void {
  controller.abort(abortReason(GatewayRefusal.UPSTREAM_TIMEOUT));
}

/** Statuses and methods whose response has no body (RFC 9110). */
function hasBody(method: string, status: number): boolean {
  return method !== 'HEAD' && status >= 200 && status !== 204 && status !== 205 && status !== 304;
}

function abortReason(reason: string): Error {
  const error = new Error(reason);
  error.name = 'AbortError';
  return error;
}

/** The id of the exchange's one JSON-RPC request, as the observer read it; null otherwise. */
function oneRequestId(request: WireRequest): string | number | null {
  if (request.requests.length !== 1) return null;
  const record = request.requests[0]!;
  return record.idIsString ? record.id : Number(record.id);
}

/** The id of the body's one JSON-RPC request, for an error answer that names it; null otherwise. */
function singleRequestId(body: Uint8Array): string | number | null {
  if (body.byteLength === 0 || body.byteLength > 65_536) return null;
  const messages = parseJsonBody(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  if (messages.length !== 1) return null;
  const id = (messages[0] as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** One line for an upstream failure: the system error code when there is one. */
function describe(e: unknown): string {
  const err = e as { code?: string; cause?: { code?: string; message?: string }; message?: string };
  return err.code ?? err.cause?.code ?? err.message ?? String(e);
}

/**
 * Closes `res`, queued behind another response on `socket`, if the connection dies before it is written;
 * returns what stops watching the connection (called at the response's close).
 */
function closeQueuedWithConnection(socket: Socket, res: ServerResponse): () => void {
  const gone = (): void => {
    if (res.writableFinished || res.destroyed) return;
    res.destroy();
    res.emit('close');
  };
  socket.once('close', gone);
  return () => socket.off('close', gone);
}
