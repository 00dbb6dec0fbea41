import { BoundedMap } from '@resumewatch/bounded';
import { HEADER_LAST_EVENT_ID, HEADER_PROTOCOL_VERSION, HEADER_SESSION_ID, headerValue } from './headers.js';
import { GuardProof, ReattachTrigger, StreamKind, TerminalDelivery, TerminalOutcome } from '@resumewatch/semconv';
import { batchTextWithout } from './batch-text.js';
import { digestOfTerminal } from './digest.js';
import {
  finishedTerminal,
  keptTerminal,
  releasedTerminal,
  type KeptTerminal,
  type ReleasedTerminal,
} from './kept-terminal.js';
import { MAX_KEPT_CHARS, keptText } from './kept-text.js';
import { isInputRound, reissuableTarget, requestIdempotencyKey, requestWorkDigest } from './reissue.js';
import {
  cancelledRequestIds,
  isErrorResponse,
  isRequest,
  isResponse,
  messagesOfBody,
  metaProtocolVersion,
  parseMessages,
  requestTarget,
} from './jsonrpc.js';
import type { JsonRpcId, JsonRpcMessage, JsonRpcResponse } from './jsonrpc.js';
import { JsonTap, PushedBody, SseTap, UnreadTap, isAbort } from './body-taps.js';
import { bodyCoding, type BodyCoding } from './content-coding.js';
import { DecodedTap } from './decoded-tap.js';
import { HeldBytes } from './held-bytes.js';
import { watchResponse } from './watched-body.js';
import { ScopedMap } from './scoped-map.js';
import type { BodyTap, ChunkArrival } from './body-taps.js';
import { CursorRing, MAX_KEPT_ID_BYTES, sameLogicalStream } from './cursor-ring.js';
import { holdShape } from './shapes.js';
import { isTaskIdMethod, isTaskNotification, isTaskRequestMethod, requestTaskId, taskRequested } from './task-facts.js';
import { NOTIFICATION_TASKS } from '@resumewatch/semconv';
import type { SseScanner } from './sse.js';
import { JsonWireEvent, SseWireEvent } from './wire-events.js';
import type {
  ReattachInfo,
  RequestRecord,
  RequestSender,
  ResumeInfo,
  SessionRecord,
  StreamEnd,
  StreamRecord,
  TerminalObservation,
  WireEvent,
  WireListener,
  WireObserverOptions,
  WireRequest,
  WireResponse,
  WireStats,
} from './types.js';

/** The observer's own view of the records it hands out read-only. */
type Writable<T> = { -readonly [K in keyof T]: T[K] };

export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

const NO_MESSAGES: readonly JsonRpcMessage[] = [];
const NO_TERMINALS: readonly TerminalObservation[] = [];
const NO_REQUESTS: readonly RequestRecord[] = [];

/**
 * Longest session id kept (`Mcp-Session-Id`, header characters are bytes): a UUID is 36, a signed token
 * a few hundred. A longer one is not kept (no session record; a stand-in names it) and never proves
 * anything; the request is forwarded as it came. 1 KiB a session at most, 10 MiB at the default cap.
 */
const MAX_SESSION_ID_BYTES = 1024;

/**
 * The one observer of the Streamable HTTP wire. `wrap(fetch)` returns a fetch that reports every
 * request, response, SSE event and stream end to the listeners, keeping bounded per-session,
 * per-request and per-stream state that the listeners share.
 */
export class WireObserver {
  /** The deciding listeners (added with `filters: true`) first, then the others; each group in the order added. */
  private readonly listeners: WireListener[] = [];
  /** How many of `listeners` (and of `eventListeners`) are deciding ones, at their start. */
  private deciders = 0;
  private eventDeciders = 0;
  /** The listeners with an onEvent hook: without any, no event objects are made. */
  private readonly eventListeners: WireListener[] = [];
  /** Per entry of `eventListeners`: it wants only the events that can decide something (`eventsWanted`). */
  private readonly decidingOnly: boolean[] = [];
  /** How many of `eventListeners` want every event. */
  private everyEventListeners = 0;
  /** Sessions the server accepted (see SessionRecord.accepted). */
  private readonly sessions: BoundedMap<string, SessionRecord>;
  /**
   * Sessions named by a client and not yet accepted by the server, apart and capped on their own: any
   * client may name any session id, and made-up ones must never push out the sessions a server
   * accepted (which would quietly end enforcement for them). One moves to `sessions` on its first 2xx.
   */
  private readonly unaccepted: BoundedMap<string, SessionRecord>;
  /** Live request records by key (requestKey), indexed by session: a DELETE visits only its session's. */
  private readonly requests: ScopedMap<RequestRecord>;
  /**
   * Released requests whose terminal was seen: the digest of their first terminal and whether it
   * finished them, by request key, so that a late terminal of one (a replay on another stream) is
   * still a duplicate or a conflict, and a finished one stays finished.
   */
  private readonly released: ScopedMap<KeptTerminal>;
  /**
   * With confirmDelivery: the requests whose first terminal a stream carried and whose receipt the
   * client has not proven yet, with the position of the event that carried each (0 in a JSON body).
   */
  private readonly awaitingDelivery: BoundedMap<StreamRecord, AwaitingProof> | undefined;
  /** With confirmDelivery: the proxy may prove receipt by a connection's next request (`proveReceived`). */
  private readonly connectionProof: boolean;
  /** Bytes that take the place of the SSE event just removed by sseEvent (a batch less its removed messages). */
  private replacementBytes: Uint8Array | undefined = undefined;
  private readonly streamsPerSession: number;
  private readonly cursorsPerSession: number;
  private readonly maxJsonBodyBytes: number;
  private readonly maxHeldEventBytes: number;
  /** Bytes held to parse bodies and events, across every body (`maxHeldBytes`). */
  private readonly heldBytes: HeldBytes;
  private unparsedJsonBodies = 0;
  /** Session ids and cursors longer than their bound, not kept (see `stats().unkeptIds`). */
  private unkeptIds = 0;
  private oversizedEvents = 0;
  private unreadEncodedBodies = 0;
  /** Bodies whose observation threw (a defect), which stood aside: passed on unobserved from there. */
  private failures = 0;
  private readonly onObservationFailure: ((error: unknown) => void) | undefined;
  private readonly releaseOnTransportClose: boolean;
  private readonly sessionlessApart: boolean;
  private readonly now: () => number;
  private requestSeq = 0;
  private streamSeq = 0;
  /** The session an initialize response assigned, by the stream that carries the response. */
  private readonly initializeStreams = new WeakMap<StreamRecord, SessionRecord>();
  /** Set when any listener may drop events: bodies are then forwarded event by event. */
  private filtering = false;
  private releasedSessions = 0;
  private releasedRequests = 0;
  /** The last request's URL (see urlText). */
  private lastUrl = '';

  constructor(options: WireObserverOptions = {}) {
    this.now = options.now ?? Date.now;
    this.sessions = new BoundedMap(options.maxSessions ?? 10_000, options.sessionRetentionMs ?? 3_600_000, this.now);
    this.unaccepted = new BoundedMap(
      options.maxUnacceptedSessions ?? 1_000,
      options.sessionRetentionMs ?? 3_600_000,
      this.now,
    );
    // A record's key is `${sessionId}\n...` (requestKey; session-less ones '' and `\n<exchange>`, both scope '').
    this.requests = new ScopedMap(
      options.maxRequests ?? 100_000,
      options.requestRetentionMs ?? 600_000,
      this.now,
      (record) => record.sessionId,
    );
    this.released = new ScopedMap(options.maxRequests ?? 100_000, options.requestRetentionMs ?? 600_000, this.now);
    // Cap and retention of the requests: a terminal its client never proves it holds is forgotten with them.
    this.awaitingDelivery = options.confirmDelivery
      ? new BoundedMap(options.maxRequests ?? 100_000, options.requestRetentionMs ?? 600_000, this.now)
      : undefined;
    this.connectionProof = options.connectionProof ?? true;
    this.streamsPerSession = options.streamsPerSession ?? 32;
    this.cursorsPerSession = options.cursorsPerSession ?? 256;
    this.maxJsonBodyBytes = options.maxJsonBodyBytes ?? 8 * 1024 * 1024;
    this.maxHeldEventBytes = options.maxHeldEventBytes ?? 8 * 1024 * 1024;
    this.heldBytes = new HeldBytes(options.maxHeldBytes ?? 64 * 1024 * 1024);
    this.releaseOnTransportClose = options.releaseOnTransportClose ?? true;
    this.sessionlessApart = options.sessionlessApart ?? false;
    this.onObservationFailure = options.onObservationFailure;
  }

  /**
   * Adds a listener. `filters: true` declares a deciding listener: its onEvent may return false, its
   * onRequest may refuse, it may write `guardAction`. Deciding listeners are called before the others
   * whatever the order of the calls to addListener, so no listener's result depends on that order.
   */
  addListener(listener: WireListener, { filters = false }: { filters?: boolean } = {}): this {
    this.listeners.splice(filters ? this.deciders++ : this.listeners.length, 0, listener);
    if (listener.onEvent) {
      const wantsDeciding = listener.eventsWanted === 'deciding';
      const at = filters ? this.eventDeciders++ : this.eventListeners.length;
      this.eventListeners.splice(at, 0, listener);
      this.decidingOnly.splice(at, 0, wantsDeciding);
      if (!wantsDeciding) this.everyEventListeners++;
    }
    if (filters) this.filtering = true;
    return this;
  }

  /**
   * With `confirmDelivery`: the client proved it read this stream whole (its next request came on the
   * same connection after the response ended, not pipelined): the requests whose first terminal the
   * stream carried are finished, with proof `next_request`. The proxy calls it before it describes that
   * next request, so the request itself is judged with the proof.
   */
  proveReceived(stream: StreamRecord): void {
    const awaiting = this.awaitingDelivery?.get(stream);
    if (awaiting === undefined) return;
    this.awaitingDelivery!.delete(stream);
    for (const record of awaiting.records) this.finish(record, GuardProof.NEXT_REQUEST);
  }

  /**
   * With `confirmDelivery`: a resume's cursor names the event at `position` of `stream` (its reader read
   * that far): the terminals the stream carried up to there are received, with proof `cursor`.
   */
  private proveByCursor(stream: StreamRecord, position: number): void {
    const awaiting = this.awaitingDelivery!.get(stream);
    if (awaiting === undefined || position <= 0) return;
    const { records, positions } = awaiting;
    let kept = 0;
    for (let i = 0; i < records.length; i++) {
      if (positions[i]! > 0 && positions[i]! <= position) {
        this.finish(records[i]!, GuardProof.CURSOR);
        continue;
      }
      records[kept] = records[i]!;
      positions[kept++] = positions[i]!;
    }
    records.length = positions.length = kept;
    if (kept === 0) this.awaitingDelivery!.delete(stream);
  }

  /**
   * @internal The maps a snapshot walks and a restore fills (observer-state.ts), at snapshot time only:
   * nothing here is on the per-event path.
   */
  stateAccess(): ObserverMaps {
    return {
      sessions: this.sessions,
      requests: this.requests,
      released: this.released,
      awaitingDelivery: this.awaitingDelivery,
      streamsPerSession: this.streamsPerSession,
      cursorsPerSession: this.cursorsPerSession,
      sessionlessApart: this.sessionlessApart,
      nextStreamId: () => `${++this.streamSeq}`,
    };
  }

  /** Bytes to put where the SSE event just removed stood (sseEvent returned false), once; undefined: nothing. */
  takeReplacement(): Uint8Array | undefined {
    const bytes = this.replacementBytes;
    this.replacementBytes = undefined;
    return bytes;
  }

  /** The session's record, accepted by the server or not yet (SessionRecord.accepted). */
  getSession(sessionId: string): SessionRecord | undefined {
    return this.sessions.get(sessionId) ?? this.unaccepted.get(sessionId);
  }

  /**
   * A request in flight, or a finished one still remembered: whole while its stream is among its
   * session's recent streams, else a compact record (terminal count 1, the first terminal's digest,
   * whether it finished the request).
   */
  getRequest(sessionId: string | undefined, id: JsonRpcId): RequestRecord | undefined {
    return this.lookup(sessionId ?? '', typeof id === 'string' ? keptText(id) : id);
  }

  private lookup(sessionId: string, id: JsonRpcId): RequestRecord | undefined {
    const key = requestKey(sessionId, id);
    const live = this.requests.get(key);
    if (live) return live;
    const session = sessionId ? this.getSession(sessionId) : undefined;
    if (session) {
      for (let i = session.streams.length - 1; i >= 0; i--) {
        for (const record of session.streams[i]!.requests) if (record.key === key) return record;
      }
    }
    const released = this.released.get(key);
    return released === undefined ? undefined : compactRecord(key, sessionId, id, releasedTerminal(released));
  }

  /**
   * Sessions and requests currently held, how many the caps pushed out, and how many were released on
   * the evidence that they were over (see "Release" in the README); the bytes held to parse bodies now,
   * and the JSON bodies and SSE events passed on unparsed (see "Bounds").
   */
  stats(): WireStats {
    return {
      sessions: this.sessions.size,
      requests: this.requests.size,
      evictions: this.sessions.evictions + this.requests.evictions,
      unacceptedSessions: this.unaccepted.size,
      unacceptedEvictions: this.unaccepted.evictions,
      unkeptIds: this.unkeptIds,
      releasedSessions: this.releasedSessions,
      releasedRequests: this.releasedRequests,
      heldBytes: this.heldBytes.total,
      unparsedJsonBodies: this.unparsedJsonBodies,
      oversizedEvents: this.oversizedEvents,
      unreadEncodedBodies: this.unreadEncodedBodies,
    };
  }

  /** Forgets the sessions and requests past their retention now (otherwise they go as later ones are added). */
  prune(): void {
    this.sessions.prune();
    this.unaccepted.prune();
    this.requests.prune();
    this.released.prune();
    this.awaitingDelivery?.prune();
  }

  wrap(fetchImpl: FetchLike = globalThis.fetch): FetchLike {
    return (input, init) => this.observe(fetchImpl, input, init);
  }

  private async observe(
    fetchImpl: FetchLike,
    input: string | URL | Request,
    init: RequestInit | undefined,
  ): Promise<Response> {
    const request = this.begin(input, init);
    let response: Response;
    try {
      response = await this.sendWithin(request, () => fetchImpl(input, this.withAddedHeaders(request, input, init)));
    } catch (error) {
      this.proxyFailed(request, error);
      throw error;
    }
    const observed = this.observeResponse(request, response);
    this.deleteSent(request);
    return observed;
  }

  /** A request before it leaves: the listeners are told, and may refuse it (their error is thrown). */
  private begin(
    input: string | URL | Request,
    init: RequestInit | undefined,
    clientScope?: string,
    clientAddress?: string,
  ): WireRequest {
    const request = this.describeRequest(input, init, clientScope, clientAddress);
    try {
      for (let i = 0; i < this.listeners.length; i++) this.listeners[i]!.onRequest?.(request);
    } catch (error) {
      for (const listener of this.listeners) listener.onRefused?.(request, error);
      throw error;
    }
    // Counted from here: a request in flight keeps its session from being released as closed.
    if (request.session) request.session.inFlight++;
    return request;
  }

  /** `send` within every listener's scope (`sendWithin`), the first listener's outermost. */
  private sendWithin<T>(request: WireRequest, send: () => T): T {
    let scoped = send;
    for (let i = this.listeners.length - 1; i >= 0; i--) {
      const listener = this.listeners[i]!;
      if (listener.sendWithin === undefined) continue;
      const inner = scoped;
      scoped = () => listener.sendWithin!(request, inner);
    }
    return scoped();
  }

  /**
   * The headers the listeners add to a request before it leaves (`requestHeaders`): each listener's,
   * unless the request's `headers` already carry one of them. A proxy that sends the request itself
   * adds them to what it sends.
   */
  addedHeaders(
    request: WireRequest,
    headers: RequestInit['headers'],
    sender: RequestSender = 'proxy',
  ): [string, string][] | undefined {
    let added: [string, string][] | undefined;
    for (let i = 0; i < this.listeners.length; i++) {
      const own = this.listeners[i]!.requestHeaders?.(request, sender);
      if (own === undefined) continue;
      const names = Object.keys(own);
      if (names.length === 0 || carriesAny(headers, names)) continue;
      for (let n = 0; n < names.length; n++) (added ??= []).push([names[n]!, own[names[n]!]!]);
    }
    return added;
  }

  /** The init to send the request with: its own, or a copy with the added headers (see addedHeaders). */
  private withAddedHeaders(
    request: WireRequest,
    input: string | URL | Request,
    init: RequestInit | undefined,
  ): RequestInit | undefined {
    const headers = init?.headers ?? (input instanceof Request ? input.headers : undefined);
    const added = this.addedHeaders(request, headers, 'fetch');
    if (added === undefined) return init;
    const merged = new Headers(headers);
    for (const [name, value] of added) merged.set(name, value);
    return { ...init, headers: merged };
  }

  /**
   * A DELETE sent ends the session whatever the answer: the client gave it up (a 405 leaves it to the
   * server, but this client will not use it again).
   */
  private deleteSent(request: WireRequest): void {
    if (request.httpMethod === 'DELETE' && request.sessionId !== undefined) this.releaseSession(request.sessionId);
  }

  /** A fetch or body of the session is over; the transport closed when an abort leaves nothing in flight. */
  private exchangeEnded(session: SessionRecord, aborted: boolean): void {
    session.inFlight--;
    if (!aborted || session.inFlight > 0 || !this.releaseOnTransportClose) return;
    // Transport closed: the client aborted its standalone stream and has nothing else in flight. A
    // single aborted POST stream is not enough: a client drops one to resume it from its cursor.
    if (session.lastStandalone?.ended === 'abort' && this.getSession(session.id) === session)
      this.releaseSession(session.id);
  }

  /** Forgets a session and its requests, and tells the listeners. */
  private releaseSession(sessionId: string): void {
    const session = this.getSession(sessionId);
    if (session) {
      this.sessions.delete(sessionId);
      this.unaccepted.delete(sessionId);
      this.releasedSessions++;
      if (!this.connectionProof) this.unprovable(session);
    }
    // The keys of the session (`${sessionId}\n...`), found by the maps' index: what the session holds, not the maps' size.
    this.releasedRequests += this.requests.deleteScope(sessionId);
    this.released.deleteScope(sessionId);
    for (const listener of this.listeners) listener.onSessionReleased?.(sessionId);
  }

  /**
   * A session left the observer: no cursor can prove anything of its streams any more (a resume of it
   * names a session the observer no longer holds, whose ring is empty). Without the connection's proof
   * no other can come, so the terminals its streams await (those a cursor could still reach: its recent
   * streams and those of its ring) are forgotten now, rather than at the requests' cap or retention:
   * they stay unfinished, as they would have.
   */
  private unprovable(session: SessionRecord): void {
    const awaiting = this.awaitingDelivery;
    if (awaiting === undefined || awaiting.size === 0) return;
    for (const stream of session.streams) awaiting.delete(stream);
    (session.cursors as CursorRing).forEachStream((stream) => void awaiting.delete(stream));
  }

  /**
   * A request stream ended after the terminals of every request it carries: no resume of it can bring
   * anything (the guard refuses one), so the records leave the request map. The stream keeps them,
   * terminal count and digest included, while its session remembers it (cursor placement, refusal).
   */
  private releaseFinished(session: SessionRecord | undefined, stream: StreamRecord): void {
    if (stream.requests.length === 0) return;
    const records = stream.requests;
    for (let i = 0; i < records.length; i++) if (records[i]!.terminalCount === 0) return;
    for (let i = 0; i < records.length; i++) {
      const record = records[i]!;
      if (this.requests.get(record.key) !== record) continue;
      this.requests.delete(record.key);
      // Only the count, digest and finished flag are needed to judge a late resume or terminal.
      (record as Writable<RequestRecord>).released = true;
      // While the stream is among its session's recent streams the record is found there; the digest
      // alone is kept once the stream leaves them (or at once, without a session).
      if (!session?.streams.includes(stream)) this.keepDigest(record);
      this.releasedRequests++;
    }
  }

  private describeRequest(
    input: string | URL | Request,
    init: RequestInit | undefined,
    clientScope: string | undefined,
    clientAddress: string | undefined,
  ): WireRequest {
    // fetch(request, init): init's headers replace the request's. Read in place, not copied.
    const headers = init?.headers ?? (input instanceof Request ? input.headers : undefined);
    const httpMethod = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const url = this.urlText(input instanceof Request ? input.url : String(input));
    const namedSession = headerValue(headers, HEADER_SESSION_ID);
    let sessionId = this.keptSessionId(namedSession);
    const lastEventId = headerValue(headers, HEADER_LAST_EVENT_ID);
    const messages = messagesOfBody(init?.body);
    // The header, else the version the request claims in its `_meta` (2026-07-28): the exchange's own era.
    let protocolVersion = headerValue(headers, HEADER_PROTOCOL_VERSION) ?? metaProtocolVersion(messages);
    const startedAt = this.now();

    let session: SessionRecord | undefined;
    // A session id too long to keep (its stand-in) has no record: nothing is kept for it, nothing proven.
    if (sessionId !== undefined && sessionId === namedSession) {
      session = this.sessions.get(sessionId);
      if (session) this.sessions.touch(sessionId);
      else {
        session = this.unaccepted.get(sessionId);
        if (session) this.unaccepted.touch(sessionId);
        else {
          session = newSession(sessionId, protocolVersion, this.cursorsPerSession);
          this.unaccepted.set(sessionId, session);
        }
      }
      // The session's own strings in place of this request's equal copies (new strings of each request's
      // headers): the request's records and spans keep them for as long as they live, minutes maybe.
      sessionId = session.id;
      if (protocolVersion === session.protocolVersion) protocolVersion = session.protocolVersion;
      else if (protocolVersion) session.protocolVersion = protocolVersion;
    }

    let requests: RequestRecord[] | undefined;
    /** The request asks for, names or listens for tasks: status notifications may come on its streams. */
    let taskNotices = false;
    // Session-less requests of one exchange, apart from every other exchange's (sessionlessApart): a
    // scope no session id can spell (a header value holds no line break).
    const keyScope = sessionId ?? (this.sessionlessApart ? `\n${this.requestSeq + 1}` : undefined);
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i]!;
      if (!isRequest(message)) continue;
      // What later decisions need of the request, computed now: the record never keeps the body. A
      // string id is kept as it is up to a bound (keptText); a number's text is short whatever was sent.
      const id = typeof message.id === 'string' ? keptText(message.id) : message.id;
      const key = requestKey(keyScope, id);
      // A request naming a task keeps its id as its target (the `Mcp-Name` of 2026-07-28).
      const target = isTaskIdMethod(message.method) ? requestTaskId(message) : requestTarget(message);
      const idempotencyKey = requestIdempotencyKey(message);
      const asksTask = taskRequested(message);
      if (asksTask || isTaskRequestMethod(message.method)) taskNotices = true;
      const record = newRequestRecord(
        key,
        sessionId ?? '',
        String(id),
        typeof id === 'string',
        keptText(String(message.method)),
        target === undefined ? undefined : keptText(target),
        reissuableTarget(message) === undefined ? undefined : requestWorkDigest(message),
        isInputRound(message),
        idempotencyKey !== undefined && idempotencyKey.length <= MAX_KEPT_CHARS ? idempotencyKey : undefined,
        asksTask,
        startedAt,
      );
      this.requests.set(key, record);
      // A new request with the id of a released one: what is kept of the old one no longer answers for the key.
      if (this.released.size > 0) this.released.delete(key);
      (requests ??= []).push(record);
    }
    let cancels: RequestRecord[] | undefined;
    for (let i = 0; i < messages.length; i++) {
      const ids = cancelledRequestIds(messages[i]!);
      for (let j = 0; j < ids.length; j++) {
        const id = ids[j]!;
        const record = this.lookup(sessionId ?? '', typeof id === 'string' ? keptText(id) : id);
        if (record) (cancels ??= []).push(record);
      }
    }

    const resume = lastEventId !== undefined ? this.describeResume(session, lastEventId) : undefined;
    const reattach = session ? this.describeReattach(session, httpMethod, resume) : undefined;
    if (session) {
      session.used = true;
      if (taskNotices) session.tasks = true;
    }

    return newWireRequest(
      ++this.requestSeq,
      httpMethod,
      url,
      sessionId,
      protocolVersion ?? session?.protocolVersion,
      session,
      messages,
      requests ?? NO_REQUESTS,
      cancels ?? NO_REQUESTS,
      resume,
      reattach,
      startedAt,
      clientScope,
      clientAddress,
      taskNotices,
    );
  }

  /**
   * A request's session id as kept: itself up to MAX_SESSION_ID_BYTES, else a stand-in of bounded
   * length (keptText), counted, which no session record is made for. The request goes on as it came.
   */
  private keptSessionId(sessionId: string | undefined): string | undefined {
    if (sessionId === undefined || sessionId.length <= MAX_SESSION_ID_BYTES) return sessionId;
    this.unkeptIds++;
    return keptText(sessionId);
  }

  /**
   * The request's URL, the same string as the last request's when equal: a stream open for a long time
   * keeps its request, and the sessions of a client usually share one URL.
   */
  private urlText(url: string): string {
    if (url === this.lastUrl) return this.lastUrl;
    this.lastUrl = url;
    return url;
  }

  /**
   * Where a resume's cursor was taken from. A cursor longer than MAX_KEPT_ID_BYTES is never kept: it
   * is not placed and proves nothing (ResumeInfo keeps a stand-in of it). Otherwise the latest stream
   * whose cursor it is (a resume that delivered nothing still holds the cursor it opened with), else
   * the stream the ring remembers delivering it; not placed when the ring shows it delivered on streams
   * that carry different requests (a server that repeats ids across streams: which one is meant?).
   */
  private describeResume(session: SessionRecord | undefined, cursor: string): ResumeInfo {
    let from: StreamRecord | undefined;
    const kept = cursor.length <= MAX_KEPT_ID_BYTES;
    if (!kept) this.unkeptIds++;
    if (session && kept) {
      for (let i = session.streams.length - 1; i >= 0; i--) {
        const stream = session.streams[i]!;
        if (stream.lastEventId === cursor || stream.deliveredEventId === cursor) {
          from = stream;
          break;
        }
      }
      const ring = session.cursors as CursorRing;
      const place = ring.place(cursor);
      if (place.ambiguous || (from && place.stream && !sameLogicalStream(from, place.stream))) from = undefined;
      else from ??= place.stream;
      // The cursor is the client's own word for how far it read: what it names proves receipt. It
      // names the EARLIEST event of the stream that bears it (a server may give one id to several
      // events; the reader may have read only the first), and nothing when that is uncertain.
      if (from && this.awaitingDelivery) this.proveByCursor(from, ring.positionOn(cursor, from));
    }
    const requests = from?.requests ?? NO_REQUESTS;
    const lastEventId = kept ? cursor : keptText(cursor);
    return { lastEventId, from, requests, terminalObserved: requests.some((r) => r.terminalCount > 0) };
  }

  private describeReattach(
    session: SessionRecord,
    httpMethod: string,
    resume: ResumeInfo | undefined,
  ): ReattachInfo | undefined {
    if (!session.initializedHere && !session.used)
      return { trigger: ReattachTrigger.NEW_TRANSPORT, previous: undefined };
    if (httpMethod !== 'GET') return undefined;
    const previous = resume ? (resume.from ?? lastEnded(session)) : session.lastStandalone;
    if (!previous || (!resume && previous.ended === undefined)) return undefined;
    return {
      trigger: previous.ended === 'clean' ? ReattachTrigger.STREAM_CLOSED : ReattachTrigger.STREAM_ERROR,
      previous,
    };
  }

  /** The response itself, its body observed in place as the application reads it (watched-body.ts). */
  private observeResponse(request: WireRequest, response: Response): Response {
    const stream = this.responded(request, response.status, response.headers, response.body !== null);
    return stream && response.body
      ? watchResponse(this, request, stream, response, this.tapFor(request, stream))
      : response;
  }

  /**
   * A proxy's request, before it leaves (a proxy that sends it itself, with Node's HTTP client, and
   * writes the body on to its own client: no fetch, no Response, no web stream). The listeners are
   * told; it throws what a listener refusing it threw (the guard's InvalidResumptionError). Then
   * `proxyFailed`, or `proxyResponse` and the body's chunks.
   */
  proxyRequest(url: string, init: RequestInit, clientScope?: string, clientAddress?: string): WireRequest {
    const request = this.begin(url, init, clientScope, clientAddress);
    // A proxy's exchange stays open as long as its stream, for hours maybe: the request's messages (its
    // parsed body) are the listeners' to read in onRequest, and not held past it.
    (request as Writable<WireRequest>).messages = NO_MESSAGES;
    return request;
  }

  /** The proxy's request failed without a response. */
  proxyFailed(request: WireRequest, error: unknown): void {
    for (const listener of this.listeners) listener.onFetchError?.(request, error);
    if (request.session) this.exchangeEnded(request.session, isAbort(error));
    this.deleteSent(request);
  }

  /**
   * The response's head arrived for the proxy's request: the body to push through the observer chunk by
   * chunk, or undefined when it has no JSON or SSE body (forward it as it is).
   */
  proxyResponse(
    request: WireRequest,
    status: number,
    headers: RequestInit['headers'] | Record<string, string | string[] | undefined>,
    hasBody: boolean,
  ): PushedBody | undefined {
    const stream = this.responded(request, status, headers as RequestInit['headers'], hasBody);
    this.deleteSent(request);
    if (!stream) return undefined;
    // A fetch's body comes decoded; a proxy's as the upstream encoded it, and is passed on so.
    const coding = bodyCoding(headerValue(headers as RequestInit['headers'], 'content-encoding'));
    return new PushedBody(
      this,
      request,
      stream,
      coding === undefined ? this.tapFor(request, stream) : this.encodedTap(request, stream, coding),
    );
  }

  /**
   * An encoded body's tap: a decoded copy observed (decoded-tap.ts), or, when the observer cannot read
   * it (an unknown or stacked coding) or would have to filter it (an SSE body with a filtering listener:
   * removing an event means encoding the body again), nothing: it passes as it comes, counted.
   */
  private encodedTap(request: WireRequest, stream: StreamRecord, coding: BodyCoding | null): BodyTap {
    if (coding === null || (stream.format === 'sse' && this.filtering)) {
      this.unreadable(stream);
      return new UnreadTap();
    }
    const host = {
      unreadable: () => this.unreadable(stream),
      observationFailed: (error: unknown) => {
        stream.unread = true;
        this.observationFailed(error);
      },
    };
    return new DecodedTap(this.tapFor(request, stream, false), coding, host, this.heldBytes);
  }

  private unreadable(stream: StreamRecord): void {
    stream.unread = true;
    this.unreadEncodedBodies++;
  }

  /** A response's head: the stream its body opens (JSON or SSE), the listeners told. */
  private responded(
    request: WireRequest,
    status: number,
    headers: RequestInit['headers'],
    hasBody: boolean,
  ): StreamRecord | undefined {
    const contentType = headerValue(headers, 'content-type') ?? '';
    if (status >= 200 && status < 300 && request.session !== undefined) this.accepted(request.session);
    const assigned = headerValue(headers, HEADER_SESSION_ID);
    const sessionId = assigned === undefined ? request.sessionId : this.keptSessionId(assigned);
    const initialized =
      sessionId !== undefined &&
      sessionId === (assigned ?? request.sessionId) &&
      request.sessionId === undefined &&
      request.requests.some((r) => r.method === 'initialize')
        ? this.initializedSession(sessionId, request.protocolVersion)
        : undefined;

    const format = contentType.includes('text/event-stream')
      ? 'sse'
      : contentType.includes('application/json')
        ? 'json'
        : undefined;
    const stream = format && hasBody ? this.openStream(request, format) : undefined;
    if (stream && initialized) this.initializeStreams.set(stream, initialized);
    const wireResponse: WireResponse = { status, contentType, sessionId, stream };
    for (let i = 0; i < this.listeners.length; i++) this.listeners[i]!.onResponse?.(request, wireResponse);
    if ((status < 200 || status >= 300) && request.requests.length > 0) this.releaseRefused(request.requests);
    if (!stream && request.session) this.exchangeEnded(request.session, false);
    return stream;
  }

  /** The server accepted the session (a 2xx to a request carrying it): its record joins the accepted ones. */
  private accepted(session: SessionRecord): void {
    if (session.accepted) return;
    session.accepted = true;
    if (this.unaccepted.get(session.id) === session) this.unaccepted.delete(session.id);
    // Unless another record of the id got there first (this one was pushed out of the unaccepted ones meanwhile).
    if (!this.sessions.has(session.id)) this.sessions.set(session.id, session);
  }

  /**
   * Requests answered with a status other than 2xx (401, 403, 404, 429, 5xx): refused, answered, never
   * to get a result on any stream, so not open requests until their retention. A JSON-RPC error in the
   * refusal's body is still observed, from its stream's own list of requests.
   */
  private releaseRefused(records: readonly RequestRecord[]): void {
    for (const record of records) {
      if (this.requests.get(record.key) !== record) continue;
      this.requests.delete(record.key);
      (record as Writable<RequestRecord>).released = true;
      this.releasedRequests++;
    }
  }

  /** The session an initialize response assigned: accepted. */
  private initializedSession(sessionId: string, protocolVersion: string | undefined): SessionRecord {
    let session = this.sessions.get(sessionId);
    if (!session) {
      session = newSession(sessionId, protocolVersion, this.cursorsPerSession);
      session.accepted = true;
      this.sessions.set(sessionId, session);
    }
    session.initializedHere = true;
    return session;
  }

  private openStream(request: WireRequest, format: 'sse' | 'json'): StreamRecord {
    const session = request.session;
    const resume = request.resume;
    const kind = resume ? resume.from?.kind : request.httpMethod === 'GET' ? StreamKind.LISTENING : StreamKind.REQUEST;
    const stream = newStreamRecord(
      `${++this.streamSeq}`,
      request.sessionId ?? '',
      request.httpMethod,
      format,
      kind,
      streamRequests(resume ? resume.requests : request.requests, kind),
      resume !== undefined,
      resume?.lastEventId,
      resume?.from?.pollingAnnounced ?? false,
    );
    if (session) {
      // A plain array, not a RecentList of @resumewatch/bounded: SessionRecord.streams is a public array,
      // at most streamsPerSession (32) long. Until full, a new one of exact size each stream (concat), not
      // push(): push gives an array of a few streams room for 17 (136 bytes more a session, held as long as
      // it lives); a spread gives more still. Once full, the oldest leaves and the others move down one in
      // place: a new array of 32 every stream was about 290 bytes of garbage a request.
      const streams = session.streams;
      if (streams.length < this.streamsPerSession) session.streams = streams.concat(stream);
      else if (streams.length === 0)
        this.streamLeft(stream); // streamsPerSession 0: none kept
      else {
        const left = streams[0]!;
        const last = streams.length - 1;
        for (let i = 0; i < last; i++) streams[i] = streams[i + 1]!;
        streams[last] = stream;
        this.streamLeft(left);
      }
      if (request.httpMethod === 'GET' && !request.resume) session.lastStandalone = stream;
    }
    return stream;
  }

  /** A stream pushed out of its session's recent streams: its released requests keep their digest. */
  private streamLeft(stream: StreamRecord): void {
    for (const record of stream.requests) if (record.released) this.keepDigest(record);
  }

  private keepDigest(record: RequestRecord): void {
    // A session-less request kept apart was its exchange's alone: no later stream can carry it.
    if (this.sessionlessApart && record.sessionId === '') return;
    if (record.firstTerminalDigest !== undefined)
      this.released.setIn(
        record.sessionId,
        record.key,
        keptTerminal(record.firstTerminalDigest, record.finished, record.proof),
      );
  }

  /**
   * The terminals of an event that reached the reader (at `position` of its stream; 0 for a JSON body,
   * `removed` the indexes of messages a listener took out): their requests are finished, or, with
   * confirmDelivery, await the client's proof.
   */
  private delivered(
    session: SessionRecord | undefined,
    stream: StreamRecord,
    terminals: readonly TerminalObservation[],
    position: number,
    removed: readonly number[] | undefined,
  ): void {
    for (let i = 0; i < terminals.length; i++) {
      const terminal = terminals[i]!;
      const record = terminal.request;
      if (record.finished || removed?.includes(terminal.messageIndex)) continue;
      if (!this.awaitingDelivery) {
        this.finish(record, GuardProof.READ);
        continue;
      }
      // No proof can ever come: it stays unfinished, and nothing is kept to wait for one.
      if (!this.provable(session, position)) continue;
      const awaiting = this.awaitingDelivery.get(stream);
      if (awaiting) {
        awaiting.records.push(record);
        awaiting.positions.push(position);
      } else this.awaitingDelivery.set(stream, { records: [record], positions: [position] });
    }
  }

  /**
   * Whether a proof may still come for a terminal delivered at `position` of a stream of `session`:
   * always with the connection's proof; else only a cursor's, which names an SSE event (position > 0)
   * of a stream of a session the observer holds (a session-less stream, or one of a session released
   * or pushed out, is never placed).
   */
  private provable(session: SessionRecord | undefined, position: number): boolean {
    if (this.connectionProof) return true;
    return position > 0 && session !== undefined && this.getSession(session.id) === session;
  }

  private finish(record: RequestRecord, proof: GuardProof): void {
    if (record.finished) return;
    record.finished = true;
    record.proof = proof;
    // A released record (a compact one is a copy): what is kept of it must say so too.
    if (record.released) {
      const released = this.released.get(record.key);
      // In place: the entry keeps its age and its place among the oldest.
      if (released !== undefined) this.released.replace(record.key, finishedTerminal(released, proof));
    }
  }

  /** What sees a body: the SSE scanner of its events, or the JSON body's parse at its end. */
  private tapFor(request: WireRequest, stream: StreamRecord, filtering = this.filtering): BodyTap {
    return stream.format === 'sse'
      ? new SseTap(this, request, stream, filtering, this.heldBytes, this.maxHeldEventBytes)
      : new JsonTap(this, request, stream, this.maxJsonBodyBytes, this.heldBytes);
  }

  /** @internal A JSON body or an SSE event was passed on unparsed (over its bound, or past maxHeldBytes). */
  passedUnparsed(format: 'json' | 'sse'): void {
    if (format === 'json') this.unparsedJsonBodies++;
    else this.oversizedEvents++;
  }

  /** Bodies whose observation threw (a defect): each stood aside, passed on as it came, unobserved from there. */
  get observationFailures(): number {
    return this.failures;
  }

  /** @internal Observing a body threw: counted, and told to `onObservationFailure`; never throws. */
  observationFailed(error: unknown): void {
    this.failures++;
    try {
      this.onObservationFailure?.(error);
    } catch {
      // The caller's report failed as well: the count stands.
    }
  }

  /** @internal Tells the listeners how a body ended (once). */
  streamEnded(request: WireRequest, stream: StreamRecord, how: StreamEnd, error: unknown): void {
    if (stream.ended) return;
    stream.ended = how;
    // The initialize result, if any, was read: the session it assigned is no longer looked up by it.
    this.initializeStreams.delete(stream);
    for (let i = 0; i < this.listeners.length; i++) this.listeners[i]!.onStreamEnd?.(request, stream, how, error);
    this.releaseFinished(request.session, stream);
    if (request.session) this.exchangeEnded(request.session, how === 'abort');
  }

  /** @internal */
  clock(): number {
    return this.now();
  }

  /**
   * @internal The chunk's events were observed: the id of the last that only deferred it (`deferId`)
   * becomes the stream's `lastEventId` and `deliveredEventId`, while the chunk's bytes are at hand.
   */
  sseScanned(stream: StreamRecord, scan: SseScanner): void {
    const id = scan.takeDeferredId();
    if (id !== undefined) stream.lastEventId = stream.deliveredEventId = id;
  }

  /**
   * @internal Observes an SSE event; returns false when a listener removed it.
   *
   * An event told to no listener and holding no terminal (a progress notification, nearly every event
   * of a stream) makes no string: its id's hash goes to the session's cursors, and its text is
   * deferred (`deferId`), made once for the last such event of the chunk (`sseScanned`). Before any
   * listener is called or a terminal observed, a deferred id is made the stream's first, so that what
   * they see of the stream is what it would be had every id been set as it came.
   */
  sseEvent(request: WireRequest, stream: StreamRecord, scan: SseScanner, arrival: ChunkArrival): boolean {
    const hasId = scan.hasId;
    if (hasId) {
      // A priming event (SEP-1699): an id and no data, the client's cursor for a later poll.
      if (scan.dataLength === 0) stream.pollingAnnounced = true;
    }
    if (scan.retry !== undefined) {
      stream.pollingAnnounced = true;
      stream.retryMs = scan.retry;
    }
    let kept: boolean;
    let terminals = NO_TERMINALS;
    /** The id was set on the stream as it came (the event was told, or parsed), not deferred. */
    let idSet = false;
    if (scan.oversized) {
      // Passed on as it came, unparsed (README, "Bounds"): its id is the client's cursor; data is taken
      // for a message (the evidence a resume brought something); a terminal in it is not seen.
      if (scan.hasData) stream.messageEvents++;
      kept = true;
    } else if (scan.hasData && !scan.mayHoldId) {
      // No "id" member anywhere: not a request or a response, so no terminal to look for. The
      // messages (notifications) are parsed only if a listener asks for them; a notification has
      // a "method" key, which `data: {}` and other non-JSON-RPC data lack.
      if (scan.mayHoldMethod) stream.messageEvents++;
      // A task status notification, on a stream where one may come (its request's or session's tasks):
      // told as a deciding event. Any other event pays only the look-up of two flags.
      const notice =
        scan.mayHoldMethod && (request.taskNotices || request.session?.tasks === true) && this.eventListeners.length > 0
          ? taskNoticeOf(scan)
          : undefined;
      // Decides nothing unless its stream is a resume (or it is a task notice): told only to listeners that want every event.
      const told =
        this.everyEventListeners > 0 || ((stream.isResume || notice !== undefined) && this.eventListeners.length > 0);
      if (told) {
        this.idsAsTheyCame(stream, scan);
        idSet = true;
        kept = this.notify(
          new SseWireEvent(scan, request, stream, notice?.data, notice?.messages, NO_TERMINALS, arrival.arrivedAt()),
          stream.isResume || notice !== undefined,
        );
      } else kept = true;
    } else {
      this.idsAsTheyCame(stream, scan);
      idSet = true;
      const id = scan.id;
      const data = scan.hasData ? scan.decodeData() : undefined;
      const messages = data !== undefined ? parseMessages(data) : NO_MESSAGES;
      terminals = this.terminalsOf(stream, messages, id);
      const deciding =
        terminals.length > 0 ||
        stream.isResume ||
        ((request.taskNotices || request.session?.tasks === true) && messages.some(isTaskNotification));
      const told = this.everyEventListeners > 0 || (deciding && this.eventListeners.length > 0);
      if (told) {
        const event = new SseWireEvent(scan, request, stream, data, messages, terminals, arrival.arrivedAt());
        kept = this.notify(event, deciding);
        // Some messages of a batch removed: the rest of the event goes on, rewritten (the tap puts it in place).
        if (kept && event.removedMessages !== undefined && this.filtering) {
          this.partlyRemoved(request, stream, event);
          return false;
        }
      } else kept = true;
    }
    kept ||= !this.filtering;
    if (kept) {
      const position = ++stream.deliveredEvents;
      if (terminals.length > 0) this.delivered(request.session, stream, terminals, position, undefined);
      if (hasId) {
        if (idSet) stream.deliveredEventId = scan.id;
        else scan.deferId();
        stream.deliveredEventAt = position;
        const ring = request.session?.cursors as CursorRing | undefined;
        if (ring !== undefined) {
          // The id's bytes while the chunk is at hand (no string made): read through the chunk's
          // DataView from a push's second id on (`idWords`), copied natively at its first; or its
          // text when it was made.
          const made = scan.madeId;
          const words = made === undefined ? scan.idWords() : undefined;
          if (words !== undefined)
            ring.addWords(scan.idHash, words, scan.idByteStart, scan.idByteEnd, stream, position);
          else if (made === undefined)
            ring.addBytes(scan.idHash, scan.bytes, scan.idByteStart, scan.idByteEnd, stream, position);
          else ring.addText(scan.idHash, made, stream, position);
        }
      }
    }
    return kept;
  }

  /** A deferred id made the stream's, then this event's id set as it comes (before any listener sees the stream). */
  private idsAsTheyCame(stream: StreamRecord, scan: SseScanner): void {
    this.sseScanned(stream, scan);
    if (scan.hasId) stream.lastEventId = scan.id;
  }

  /**
   * An event some of whose messages a listener removed (`removeMessage`): false when every message
   * went (the event is removed whole), else true, its kept messages delivered and the event rewritten
   * without the others (`takeReplacement`, which the tap puts in the removed event's place).
   */
  private partlyRemoved(request: WireRequest, stream: StreamRecord, event: SseWireEvent): boolean {
    const removed = event.removedMessages!;
    const messages = event.messages;
    const kept = messages.filter((_, i) => !removed.includes(i));
    if (kept.length === 0) return false;
    this.replacementBytes = rewrittenEvent(event, removed);
    const position = ++stream.deliveredEvents;
    this.delivered(request.session, stream, event.terminals, position, removed);
    const id = event.id;
    if (id !== undefined) {
      stream.deliveredEventId = id;
      stream.deliveredEventAt = position;
      (request.session?.cursors as CursorRing | undefined)?.add(id, stream, position);
    }
    return true;
  }

  /** Counts a message event and observes the terminals among its messages. */
  private terminalsOf(
    stream: StreamRecord,
    messages: readonly JsonRpcMessage[],
    eventId: string | undefined,
  ): readonly TerminalObservation[] {
    if (messages.length === 0) return NO_TERMINALS;
    stream.messageEvents++;
    let terminals: TerminalObservation[] | undefined;
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i]!;
      if (!isResponse(message)) continue;
      const terminal = this.observeTerminal(stream, message, eventId, i);
      if (terminal) (terminals ??= []).push(terminal);
    }
    return terminals ?? NO_TERMINALS;
  }

  /** @internal Observes the messages of a JSON body. */
  jsonBody(request: WireRequest, stream: StreamRecord, messages: readonly JsonRpcMessage[]): void {
    const terminals = this.terminalsOf(stream, messages, undefined);
    if (this.eventListeners.length > 0)
      this.notify(new JsonWireEvent(request, stream, messages, terminals, this.now()), true);
    // A JSON body is passed whole, whatever a listener decided.
    if (terminals.length > 0) this.delivered(request.session, stream, terminals, 0, undefined);
  }

  /** Tells the event to the listeners that want it (`deciding`: it can decide something); false when one removed it. */
  private notify(event: WireEvent, deciding: boolean): boolean {
    const listeners = this.eventListeners;
    const decidingOnly = this.decidingOnly;
    let keep = true;
    for (let i = 0; i < listeners.length; i++) {
      if (!deciding && decidingOnly[i]) continue;
      if (listeners[i]!.onEvent!(event) === false) keep = false;
    }
    if (!keep || (event as SseWireEvent | JsonWireEvent).removedMessages !== undefined)
      for (const listener of this.listeners) listener.onEventDropped?.(event);
    return keep;
  }

  private observeTerminal(
    stream: StreamRecord,
    message: JsonRpcResponse,
    eventId: string | undefined,
    messageIndex: number,
  ): TerminalObservation | undefined {
    if (message.id === null) return undefined;
    const id = typeof message.id === 'string' ? keptText(message.id) : message.id;
    const text = String(id);
    const isString = typeof id === 'string';
    let record = stream.requests.find((r) => r.id === text && r.idIsString === isString);
    let foreign = false;
    if (!record) {
      record = this.lookup(stream.sessionId, id);
      if (!record) return undefined;
      // A resume from a cursor the observer could not place learns its request from its first
      // terminal; any other stream that never carried the request got it from another stream.
      foreign = stream.kind !== undefined || stream.requests.length > 0;
      if (!foreign) stream.requests.push(record);
    }
    const digest = digestOfTerminal(message);
    const seen = record.terminalCount > 0;
    const conflict = seen && record.firstTerminalDigest !== digest;
    const firstStream = record.firstTerminalStream;
    const firstEventId = record.firstTerminalEventId;
    record.terminalCount++;
    if (!seen) {
      record.firstTerminalStream = stream;
      record.firstTerminalEventId = eventId;
      record.firstTerminalDigest = digest;
    }
    if (foreign) stream.foreignTerminalEvents++;
    else stream.terminalEvents++;
    this.requests.touch(record.key);
    if (record.method === 'initialize' && 'result' in message) this.noteProtocolVersion(stream, message.result);
    const error = isErrorResponse(message);
    return {
      request: record,
      messageIndex,
      outcome: error ? TerminalOutcome.ERROR : TerminalOutcome.RESULT,
      errorCode: error ? message.error.code : undefined,
      duplicate: seen && !conflict,
      conflict,
      foreign,
      delivery: stream.isResume ? TerminalDelivery.REPLAY : TerminalDelivery.LIVE,
      firstStream: seen ? firstStream : undefined,
      firstEventId: seen ? firstEventId : undefined,
    };
  }

  private noteProtocolVersion(stream: StreamRecord, result: unknown): void {
    const session = this.initializeStreams.get(stream);
    const version = (result as { protocolVersion?: unknown } | null)?.protocolVersion;
    if (session && typeof version === 'string') session.protocolVersion ??= version;
  }
}

/** `headers` carry one of `names` already. A loop, not `names.some(...)`: no closure per request. */
function carriesAny(headers: RequestInit['headers'], names: readonly string[]): boolean {
  for (let i = 0; i < names.length; i++) if (headerValue(headers, names[i]!) !== undefined) return true;
  return false;
}

/*
 * The records are made by these functions, one literal each, so that an instance of each can be held
 * (shapes.ts): a literal's hidden class is shared by every object the same literal makes, and freed
 * with the last of them. The held ones are made with values of the kinds real ones hold (a double
 * start time, strings and arrays), so that they keep the very hidden class real records have.
 */
/**
 * The requests array of a new stream. One of a known kind that carries no request never gains one (a
 * terminal it carries is foreign: see `observeTerminal`), so all such streams share one empty array (a
 * listening stream's own would be 32 bytes more a session). Any other gets a copy of exact size (the
 * request's array may have spare slots), kept as long as the stream.
 */
function streamRequests(requests: readonly RequestRecord[], kind: StreamKind | undefined): RequestRecord[] {
  return requests.length === 0 && kind !== undefined ? NO_STREAM_REQUESTS : [...requests];
}

/** The requests of every stream of a known kind that carries none: never written (see streamRequests). */
const NO_STREAM_REQUESTS: RequestRecord[] = [];

export function newStreamRecord(
  id: string,
  sessionId: string,
  httpMethod: string,
  format: 'sse' | 'json',
  kind: StreamKind | undefined,
  requests: RequestRecord[],
  isResume: boolean,
  deliveredEventId: string | undefined,
  pollingAnnounced: boolean,
): StreamRecord {
  return {
    id,
    sessionId,
    httpMethod,
    format,
    kind,
    requests,
    isResume,
    lastEventId: undefined,
    deliveredEventId,
    deliveredEvents: 0,
    deliveredEventAt: 0,
    messageEvents: 0,
    terminalEvents: 0,
    foreignTerminalEvents: 0,
    pollingAnnounced,
    retryMs: undefined,
    unread: false,
    unwritten: false,
    ended: undefined,
  };
}

export function newRequestRecord(
  key: string,
  sessionId: string,
  id: string,
  idIsString: boolean,
  method: string,
  target: string | undefined,
  workDigest: string | undefined,
  inputRound: boolean,
  idempotencyKey: string | undefined,
  taskRequested: boolean,
  startedAt: number,
): RequestRecord {
  return {
    key,
    sessionId,
    id,
    idIsString,
    method,
    target,
    workDigest,
    inputRound,
    idempotencyKey,
    taskRequested,
    released: false,
    startedAt,
    terminalCount: 0,
    finished: false,
    proof: undefined,
    firstTerminalStream: undefined,
    firstTerminalEventId: undefined,
    firstTerminalDigest: undefined,
  };
}

function newWireRequest(
  seq: number,
  httpMethod: string,
  url: string,
  sessionId: string | undefined,
  protocolVersion: string | undefined,
  session: SessionRecord | undefined,
  messages: readonly JsonRpcMessage[],
  requests: readonly RequestRecord[],
  cancels: readonly RequestRecord[],
  resume: ResumeInfo | undefined,
  reattach: ReattachInfo | undefined,
  startedAt: number,
  clientScope: string | undefined,
  clientAddress: string | undefined,
  taskNotices: boolean,
): WireRequest {
  return {
    seq,
    httpMethod,
    url,
    sessionId,
    protocolVersion,
    session,
    messages,
    requests,
    cancels,
    resume,
    reattach,
    startedAt,
    clientScope,
    clientAddress,
    taskNotices,
    guardAction: undefined,
    guardProof: undefined,
  };
}

holdShape(new WireObserver());
{
  const session = newSession('held', undefined, 1);
  const stream = holdShape(
    newStreamRecord('0', 'held', 'POST', 'sse', StreamKind.REQUEST, [], false, undefined, false),
  );
  const record = holdShape(
    newRequestRecord(
      'held\n0',
      'held',
      '0',
      false,
      'ping',
      undefined,
      undefined,
      false,
      undefined,
      false,
      Date.now() + 0.5,
    ),
  );
  stream.requests.push(record);
  session.streams.push(stream);
  holdShape(
    newWireRequest(
      1,
      'POST',
      'http://held/',
      'held',
      undefined,
      holdShape(session),
      NO_MESSAGES,
      [record],
      NO_REQUESTS,
      undefined,
      undefined,
      Date.now() + 0.5,
      'held',
      'held',
      false,
    ),
  );
}

/**
 * The data of an event with no "id" member when it holds a task status notification (it names
 * `notifications/tasks` and parses to one), with its messages; else undefined.
 */
function taskNoticeOf(scan: SseScanner): { data: string; messages: readonly JsonRpcMessage[] } | undefined {
  const data = scan.decodeData();
  if (!data.includes(NOTIFICATION_TASKS)) return undefined;
  const messages = parseMessages(data);
  return messages.some(isTaskNotification) ? { data, messages } : undefined;
}

export function newSession(id: string, protocolVersion: string | undefined, cursors: number): SessionRecord {
  return {
    id,
    initializedHere: false,
    accepted: false,
    protocolVersion,
    streams: [],
    lastStandalone: undefined,
    cursors: new CursorRing(cursors),
    used: false,
    inFlight: 0,
    tasks: false,
  };
}

/** Requests of a stream whose first terminal it carried, awaiting the client's proof, and the position of each terminal's event. */
export interface AwaitingProof {
  readonly records: RequestRecord[];
  readonly positions: number[];
}

/** @internal The observer's maps, for its snapshot and restore (observer-state.ts). */
export interface ObserverMaps {
  readonly sessions: BoundedMap<string, SessionRecord>;
  readonly requests: BoundedMap<string, RequestRecord>;
  readonly released: BoundedMap<string, KeptTerminal>;
  readonly awaitingDelivery: BoundedMap<StreamRecord, AwaitingProof> | undefined;
  readonly streamsPerSession: number;
  readonly cursorsPerSession: number;
  readonly sessionlessApart: boolean;
  /** A stream id of this process (a restored stream gets a new one: ids are unique per observer). */
  nextStreamId(): string;
}

/** What is left of a released request: its first terminal's digest and whether it finished it, no payload. */
function compactRecord(key: string, sessionId: string, id: JsonRpcId, released: ReleasedTerminal): RequestRecord {
  return {
    key,
    sessionId,
    id: String(id),
    idIsString: typeof id === 'string',
    method: '',
    target: undefined,
    workDigest: undefined,
    inputRound: false,
    idempotencyKey: undefined,
    taskRequested: false,
    released: true,
    startedAt: 0,
    terminalCount: 1,
    finished: released.finished,
    proof: released.proof,
    firstTerminalStream: undefined,
    firstTerminalEventId: undefined,
    firstTerminalDigest: released.digest,
  };
}

function lastEnded(session: SessionRecord): StreamRecord | undefined {
  for (let i = session.streams.length - 1; i >= 0; i--) if (session.streams[i]!.ended) return session.streams[i];
  return undefined;
}

/**
 * A request's key: its scope, a line break, and its id with the id's type (a string id behind a `"`, which
 * no number's text starts with), so that `1` and `"1"` are two requests, as JSON-RPC matches them.
 */
export function requestKey(scope: string | undefined, id: JsonRpcId): string {
  return typeof id === 'string' ? `${scope ?? ''}\n"${id}` : `${scope ?? ''}\n${id}`;
}

/**
 * An SSE event rewritten without the `removed` messages of its batch: its id, type and retry as they
 * were, the kept messages as one JSON array on one data line, each message's text as the server wrote it
 * (`batchTextWithout`: never serialised again, so no depth can overflow the stack here). Should the
 * batch's text not split (it parsed, so it does), the event's data goes on whole, removed messages and
 * all: forwarded and reported rather than withheld, and nothing serialised again.
 */
function rewrittenEvent(event: SseWireEvent, removed: readonly number[]): Uint8Array {
  let text = '';
  if (event.id !== undefined) text += `id: ${event.id}\n`;
  if (event.event !== '') text += `event: ${event.event}\n`;
  if (event.retry !== undefined) text += `retry: ${event.retry}\n`;
  text += `data: ${batchTextWithout(event.data, removed) ?? event.data.replaceAll('\n', '\ndata: ')}\n\n`;
  return new TextEncoder().encode(text);
}
