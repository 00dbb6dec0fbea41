import type {
  GuardAction,
  GuardProof,
  ReattachTrigger,
  StreamKind,
  TerminalDelivery,
  TerminalOutcome,
} from '@resumewatch/semconv';
import type { JsonRpcMessage } from './jsonrpc.js';
import type { SseEvent } from './sse.js';

export type { ReattachTrigger, StreamKind };

export type StreamEnd = 'clean' | 'error' | 'abort';

/** One logical MCP session as this process has seen it. */
export interface SessionRecord {
  readonly id: string;
  /** The session id arrived on an initialize response seen by this observer. */
  initializedHere: boolean;
  /**
   * The server accepted the session: its initialize response assigned it, or a request carrying it was
   * answered 2xx. Until then the record is kept apart, capped on its own (`maxUnacceptedSessions`), so
   * that made-up session ids never push out accepted sessions.
   */
  accepted: boolean;
  protocolVersion: string | undefined;
  /**
   * Recent streams of the session, oldest first, capped. The observer puts a new array here when a
   * stream opens (one of exact size): read it afresh, do not hold it.
   */
  streams: StreamRecord[];
  /** The most recent stream opened by a GET without Last-Event-ID (the standalone stream). */
  lastStandalone: StreamRecord | undefined;
  /**
   * The stream each recently delivered SSE event id came from (the last `cursorsPerSession` deliveries):
   * a client may resume from any id it holds, not only a stream's last (one that does not advance its
   * cursor on a final result sends an id from before it).
   */
  readonly cursors: CursorMemory;
  /** Requests for this session have already been seen (distinguishes a first use). */
  used: boolean;
  /** Fetches of the session awaiting a response, and bodies of it not yet ended. */
  inFlight: number;
  /**
   * The session's client has used tasks (a request asked for one, or named one): status notifications
   * (`notifications/tasks/status`) on its streams are read and told (`WireRequest.taskNotices`).
   */
  tasks: boolean;
}

/** Recently delivered SSE event ids of a session and the streams that delivered them. */
export interface CursorMemory {
  /**
   * The stream that last delivered this event id (its text compared: ids whose hashes collide are two
   * ids), if the delivery and its text are still remembered (an id over 256 bytes is never).
   */
  get(eventId: string): StreamRecord | undefined;
  /** Deliveries remembered (an id delivered twice counts twice). */
  readonly size: number;
}

/**
 * One JSON-RPC request, keyed by (session, id). The id's JSON type is part of it: `1` and `"1"` are two
 * requests (JSON-RPC 2.0 matches a response to its request by the id's value, type included). It keeps
 * what later decisions need of the request, computed once when the request is described, never its
 * body: a record may be kept for minutes (`requestRetentionMs`) whatever the client sent. The id, method
 * and target are kept as they are up to 256 characters; a longer one is a stand-in of bounded length (its
 * first 64 characters, its length and a digest of it), one per string.
 */
export interface RequestRecord {
  /** The session (or the exchange, for a session-less request kept apart), a line break, and the id with its type; unique per observer. */
  readonly key: string;
  readonly sessionId: string;
  /** The id as text (a string id as it is, a number in its JSON form); `idIsString` tells `1` from `"1"`. */
  readonly id: string;
  /** The JSON-RPC id was a string. */
  readonly idIsString: boolean;
  readonly method: string;
  /**
   * What the request names: the tool, prompt or resource (`params.name`, `params.uri`), or, for a request
   * of `TASK_ID_METHODS` (`tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update`), the task id
   * (`params.taskId`, which 2026-07-28 clients also send as `Mcp-Name`).
   */
  readonly target: string | undefined;
  /**
   * The request asks for a task: 2025-11-25's `params.task`, or the 2026-07-28 tasks extension declared in
   * its `_meta["io.modelcontextprotocol/clientCapabilities"].extensions`.
   */
  readonly taskRequested: boolean;
  /**
   * For a request whose method names work that a re-issue repeats (`tools/call`, `prompts/get`,
   * `resources/read`; 2026-07-28): the unkeyed digest of that work (`requestWorkDigest`: SHA-256 of
   * the method, the name and the canonical arguments). It never leaves the process: a listener keys
   * it (`keyedArgumentsDigest`). Undefined for any other request.
   */
  readonly workDigest: string | undefined;
  /** The request carries `inputResponses` (a Multi Round-Trip round): it goes on with its call, never re-issues one. */
  readonly inputRound: boolean;
  /**
   * The idempotency key the request carries in its `_meta` (`requestIdempotencyKey`), up to 256
   * characters (a longer one is not kept).
   */
  readonly idempotencyKey: string | undefined;
  /**
   * The record left the request map (its request finished and the stream that carried it ended; see
   * "Release" in the README), or is the compact record of such a request.
   */
  readonly released: boolean;
  readonly startedAt: number;
  /** Terminal events seen for this request so far, duplicates included: what the wire showed. */
  terminalCount: number;
  /**
   * The request is finished: a terminal event of it reached its reader (the application; with
   * `confirmDelivery`, a proxy's client, once it proved it). The one answer to "is this request finished?": a resume of
   * it has nothing to bring, and another terminal of it is a copy. Set once every listener has seen the
   * event that delivered it, so during a listener's hook it says what held before that event.
   */
  finished: boolean;
  /**
   * What showed the reader holds the terminal, once `finished`: `application_read` (the application read the event,
   * in its own process), or, with `confirmDelivery`, the client's proof (`cursor`, `next_request`).
   */
  proof: GuardProof | undefined;
  /** The stream the first terminal event arrived on. */
  firstTerminalStream: StreamRecord | undefined;
  /** The SSE id of the first terminal event, when it had one. */
  firstTerminalEventId: string | undefined;
  /**
   * 32-bit FNV-1a digest of the first terminal's `result` or `error` member (its JSON text, at most
   * the first 64 KiB and the length): a later terminal with another digest is a conflict, not a duplicate.
   */
  firstTerminalDigest: number | undefined;
}

/** One HTTP response body: a stream. A resumed stream is a new stream. */
export interface StreamRecord {
  /** Assigned by the observer, unique in the process. */
  readonly id: string;
  readonly sessionId: string;
  readonly httpMethod: string;
  /** The body's media type. */
  readonly format: 'sse' | 'json';
  /**
   * A request's stream (a POST response, or a resumption of one) or the session's listening stream
   * (a GET without `Last-Event-ID`, or a resumption of one). A resume inherits the kind of the stream
   * its cursor came from; undefined when the cursor could not be placed.
   */
  readonly kind: StreamKind | undefined;
  /**
   * Requests whose responses this stream carries: those of its POST, those inherited from the stream
   * it resumes, and any whose response arrives on it.
   */
  readonly requests: RequestRecord[];
  /** Opened with Last-Event-ID. */
  readonly isResume: boolean;
  /** The last SSE event id seen on this stream. */
  lastEventId: string | undefined;
  /**
   * The cursor a client reading this stream holds: the id of the last event it was given (events a
   * listener removed do not count), or, on a resumed stream, the Last-Event-ID it was opened with
   * until then. A client resumes from this, which differs from `lastEventId` once an event was removed.
   */
  deliveredEventId: string | undefined;
  /**
   * SSE events of this stream given to its reader so far (removed events do not count): the position of
   * each delivered event, by which a cursor on this stream says how far its reader read.
   */
  deliveredEvents: number;
  /** The position (see `deliveredEvents`) of the event `deliveredEventId` names on this stream; 0 for the cursor a resume opened with. */
  deliveredEventAt: number;
  /**
   * Events that carried at least one JSON-RPC message (request, notification or response). Priming
   * events (empty data), `data: {}` and other non-JSON-RPC data are not messages. Data without an
   * `"id"` member is not parsed on the hot path: it counts when it holds a `"method"` key (a notification).
   */
  messageEvents: number;
  /** Terminal events of requests this stream carries (foreign terminals not counted). */
  terminalEvents: number;
  /** Terminal events of requests this stream never carried (see `TerminalObservation.foreign`). */
  foreignTerminalEvents: number;
  /**
   * The server announced polling (SEP-1699) on this stream or on the stream its cursor came from (the
   * resume chain): a priming event (an `id` with empty data) or a `retry:` field.
   */
  pollingAnnounced: boolean;
  /** The reconnection delay (ms) the stream's last SSE `retry:` field announced; undefined when it carried none. */
  retryMs: number | undefined;
  /**
   * The body could not be read (a proxy's body in a `Content-Encoding` the observer cannot decode, corrupt,
   * or a decompression bomb; with a filtering listener, an encoded SSE body): it passed unobserved from
   * some point, so what it carried is unknown, and its end says nothing of its requests' results.
   */
  unread: boolean;
  /**
   * A proxy read this body on after its client had left, before any of it was written (a 2025-11-25 task
   * call's answer, read so that the task it created is known): what it carries, no client received.
   */
  unwritten: boolean;
  ended: StreamEnd | undefined;
}

export interface ResumeInfo {
  readonly lastEventId: string;
  /** The stream the cursor was taken from, when this observer saw it. */
  readonly from: StreamRecord | undefined;
  /** The requests that stream carried. */
  readonly requests: readonly RequestRecord[];
  /** A terminal event for (one of) those requests had been seen when the cursor was sent. */
  readonly terminalObserved: boolean;
}

export interface ReattachInfo {
  readonly trigger: ReattachTrigger;
  readonly previous: StreamRecord | undefined;
}

/** What sends a request: the observed `fetch` (`wrap`), or a proxy with its own HTTP client (`proxyRequest`). */
export type RequestSender = 'fetch' | 'proxy';

/** One HTTP request through the observed fetch. */
export interface WireRequest {
  readonly seq: number;
  readonly httpMethod: string;
  readonly url: string;
  readonly sessionId: string | undefined;
  /**
   * The `MCP-Protocol-Version` header, else the version the body's request claims in its `_meta`
   * (`io.modelcontextprotocol/protocolVersion`, 2026-07-28): this exchange's version, whatever other
   * exchanges of the same client or server speak.
   */
  readonly protocolVersion: string | undefined;
  readonly session: SessionRecord | undefined;
  /**
   * JSON-RPC messages in the request body. For a proxy's request (`proxyRequest`), only while the
   * listeners' `onRequest` runs: empty after, so an exchange open for hours holds no body.
   */
  readonly messages: readonly JsonRpcMessage[];
  /** Records of the JSON-RPC requests in the body. */
  readonly requests: readonly RequestRecord[];
  /** Known requests this body cancels (`notifications/cancelled` sent by the client). */
  readonly cancels: readonly RequestRecord[];
  readonly resume: ResumeInfo | undefined;
  readonly reattach: ReattachInfo | undefined;
  readonly startedAt: number;
  /**
   * The client a proxy received this request from (set by a proxy door, `proxyRequest`): requests of
   * different clients are never compared, so a re-issue (2026-07-28) is matched within one client's
   * requests. Undefined for a fetch, whose observer serves one client.
   */
  readonly clientScope: string | undefined;
  /**
   * The address of the client a proxy received this request from (set by a proxy door, `proxyRequest`:
   * the peer's, or behind a trusted proxy the forwarded one), for the spans to say who re-opened a
   * listening stream that names no session. Undefined for a fetch.
   */
  readonly clientAddress: string | undefined;
  /**
   * Task status notifications may come on this request's streams: the request asks for a task, names
   * one, or is a 2026-07-28 `subscriptions/listen`. On such a stream, or one of a session that used tasks
   * (`SessionRecord.tasks`), an SSE event that holds a `"method"` key and `notifications/tasks` is parsed
   * and told to every listener as a deciding event; any other event costs what it did (README, "Tasks").
   */
  readonly taskNotices: boolean;
  /**
   * What a deciding listener (the guard) did about this request: refused it, reported its resume
   * failed, or reported it re-issues a broken request (2026-07-28 era). Written only by a listener
   * added with `filters: true`, whose hooks run before any other listener's, so every other listener
   * reads the decision whatever the order they were added in.
   */
  guardAction: GuardAction | undefined;
  /** What the guard's action on this request rests on (a refused resume: the proof of receipt). */
  guardProof: GuardProof | undefined;
}

export interface WireResponse {
  readonly status: number;
  readonly contentType: string;
  /** Session id assigned or echoed by the server. */
  readonly sessionId: string | undefined;
  /** The stream of the body, when it is SSE or JSON. */
  readonly stream: StreamRecord | undefined;
}

export interface TerminalObservation {
  readonly request: RequestRecord;
  /** Index of the terminal's message among its event's (or JSON body's) messages: a batch carries several. */
  readonly messageIndex: number;
  readonly outcome: TerminalOutcome;
  readonly errorCode: number | undefined;
  /** A terminal event with the same content had already been seen for this (session, request). */
  readonly duplicate: boolean;
  /**
   * A terminal event had already been seen for this (session, request) and its content differs (its
   * digest): a server replayed another request's or session's result. Never also `duplicate`.
   */
  readonly conflict: boolean;
  /**
   * The stream never carried this request (the listening stream, or the stream of another request):
   * the server replayed across streams. Still counted as the request's terminal.
   */
  readonly foreign: boolean;
  readonly delivery: TerminalDelivery;
  /** On a duplicate or conflict: the stream (and SSE id) of the request's first terminal. */
  readonly firstStream: StreamRecord | undefined;
  readonly firstEventId: string | undefined;
}

/** One SSE event, or one JSON response body. */
export interface WireEvent {
  readonly request: WireRequest;
  readonly stream: StreamRecord;
  /** Absent for JSON bodies. */
  readonly sse: SseEvent | undefined;
  readonly eventId: string | undefined;
  readonly messages: readonly JsonRpcMessage[];
  readonly terminals: readonly TerminalObservation[];
  readonly at: number;
  /**
   * What a deciding listener (the guard) did about this event: removed a duplicate terminal, or
   * reported a conflicting one. Written only in the hook of a listener added with `filters: true`,
   * which the observer calls before any other listener's.
   */
  guardAction: GuardAction | undefined;
  /** What the guard's action rests on (the removed terminal's `RequestRecord.proof`). */
  guardProof: GuardProof | undefined;
  /**
   * Removes one message of an SSE event that carries a JSON-RPC batch (by index in `messages`): the rest
   * of the event still reaches the reader, rewritten without it. Only a deciding listener calls it. An
   * event whose every message is removed is removed whole, as when its `onEvent` returns false.
   */
  removeMessage(index: number): void;
}

/**
 * What the guard, the instrumentation and the lab's clients hook into. Calls are synchronous and
 * in wire order; the records are live objects, valid until the observer releases them. The listeners
 * added with `filters: true` (the deciding ones: the guard) are called first, in the order they were
 * added, then the others: a decision (a refusal, a removed event, `guardAction`) is taken before any
 * other listener sees what it decided, whatever order the listeners were added in.
 */
export interface WireListener {
  /**
   * Which SSE events `onEvent` is called with: `all` (the default), or `deciding`: only an event that
   * carries a terminal, and every event of a resumed stream (its first message settles the resume). A
   * JSON body is always told. With no listener wanting all events, an SSE event that decides nothing
   * makes no event object and calls no listener.
   */
  readonly eventsWanted?: 'all' | 'deciding';
  /** Before the request leaves the process. Throwing refuses it: the fetch rejects with that error. */
  onRequest?(request: WireRequest): void;
  /**
   * Headers to add to the request as it leaves, after onRequest (the instrumentation's trace context,
   * lower-case names). They are one piece: when the request already carries any of them (the
   * application propagates its own), none is added. `sender` says what sends the request: the
   * observed `fetch`, or a proxy that sends it itself (`addedHeaders`).
   */
  requestHeaders?(request: WireRequest, sender: RequestSender): Readonly<Record<string, string>> | undefined;
  /**
   * Sends the request in the listener's scope: called with the send, returns what it returns (the
   * instrumentation sends within its request span's context, so that an HTTP client instrumentation's
   * span of the same request is that span's child). Listeners that have one nest in their order.
   */
  sendWithin?<T>(request: WireRequest, send: () => T): T;
  /** A listener refused the request; nothing was sent. */
  onRefused?(request: WireRequest, error: unknown): void;
  onResponse?(request: WireRequest, response: WireResponse): void;
  /** The fetch itself failed (no response). */
  onFetchError?(request: WireRequest, error: unknown): void;
  /** An event on a stream. Returning false removes an SSE event from the body the client reads. */
  onEvent?(event: WireEvent): boolean | void;
  /** An event removed by a listener, whole or some of its messages: told to every listener. */
  onEventDropped?(event: WireEvent): void;
  onStreamEnd?(request: WireRequest, stream: StreamRecord, end: StreamEnd, error: unknown): void;
  /**
   * The observer released the session and its requests (a DELETE sent, or the transport closed): drop
   * what is kept for them. Records already handed out stay valid objects but are no longer updated.
   */
  onSessionReleased?(sessionId: string): void;
}

export interface WireObserverOptions {
  /** Most sessions kept that the server accepted (SessionRecord.accepted). Default 10,000. */
  maxSessions?: number;
  /**
   * Most sessions kept that a client named and the server has not accepted yet, apart from the accepted
   * ones: made-up session ids push out only each other (counted in `stats().unacceptedEvictions`).
   * Default 1,000.
   */
  maxUnacceptedSessions?: number;
  /** Most requests kept. Default 100,000. */
  maxRequests?: number;
  /** How long a finished request stays known, so a late resume of it is still recognised. Default 10 min. */
  requestRetentionMs?: number;
  /** How long an idle session stays known. Default 1 h. */
  sessionRetentionMs?: number;
  /** Streams remembered per session for cursor look-ups. Default 32. */
  streamsPerSession?: number;
  /** Delivered event ids remembered per session for cursor look-ups. Default 256. */
  cursorsPerSession?: number;
  /**
   * Largest JSON body parsed for JSON-RPC messages; a larger one passes unparsed (counted in
   * `stats().unparsedJsonBodies`). Default 8 MiB.
   */
  maxJsonBodyBytes?: number;
  /**
   * Largest SSE event held to parse it: one larger is passed on as it arrives, unparsed, even with a
   * filtering listener (counted in `stats().oversizedEvents`; README, "Bounds"). Default 8 MiB.
   */
  maxHeldEventBytes?: number;
  /**
   * Most bytes held at once, across every body, to parse JSON bodies and SSE events: a body or event
   * that would pass it passes unparsed, as one over its own bound does. Default 64 MiB.
   */
  maxHeldBytes?: number;
  /**
   * Release a session when its transport closes (its standalone stream aborted, nothing else in
   * flight), as well as on DELETE. Default true: in the client's own process that is the client closing
   * its transport. False for a proxy, which cannot tell a client that closed its transport from one
   * that dropped its listening stream and will reconnect on the session: only a DELETE (or retention)
   * ends a session there.
   */
  releaseOnTransportClose?: boolean;
  /**
   * Key each request without a session (initialize, a 2026-07-28 request) by its own exchange, so that
   * one observer can serve many clients: their session-less request ids never meet, and such a
   * request's digest is not kept once its stream ended (nothing can resume it). Default false: one
   * client's observer keys them by id, as its transport does.
   */
  sessionlessApart?: boolean;
  /**
   * A terminal finishes its request (`RequestRecord.finished`) only once the client proves it holds it:
   * its cursor (`Last-Event-ID`) names the terminal's event or a later one of the same stream (the
   * observer sees that itself), or its next request came on the same connection after the response
   * that carried the terminal ended (the proxy tells that: `proveReceived`). For a proxy, which knows
   * what it wrote, not what its client read: without proof a resume of the request, and a replay of
   * its result (maybe the client's only copy), are let through. Default false: a terminal finishes its
   * request when the event that carried it is passed to the reader (`application_read`).
   */
  confirmDelivery?: boolean;
  /**
   * With `confirmDelivery`: the proxy may call `proveReceived` (it trusts a connection's next request as
   * proof). Default true. False: a cursor is the only proof, so a terminal no cursor can ever name (in a
   * JSON body, on a session-less stream, or on a stream of a session no longer held) is not kept waiting
   * for one, and a session's awaited terminals are forgotten when it is released.
   */
  connectionProof?: boolean;
  /**
   * Called when observing a body threw (a defect of the observer or of a listener, never of the
   * traffic): the body stood aside, its bytes passed on as they came, unobserved from there (counted
   * in `observationFailures`). For a log line; called on the data path, so keep it cheap.
   */
  onObservationFailure?: (error: unknown) => void;
  now?: () => number;
}

/** What `WireObserver.stats()` tells. */
export interface WireStats {
  /** Sessions held. */
  sessions: number;
  /** Requests held (in flight, or finished and not yet released). */
  requests: number;
  /** Sessions and requests the caps pushed out. */
  evictions: number;
  /** Sessions named by clients and not (yet) accepted by the server, held apart. */
  unacceptedSessions: number;
  /** Unaccepted sessions their own cap pushed out (made-up session ids, or a flood of new sessions). */
  unacceptedEvictions: number;
  /**
   * Session ids over 1 KiB and `Last-Event-ID` cursors over 256 bytes: not kept (a stand-in names
   * them), never proof; their requests are forwarded as they came.
   */
  unkeptIds: number;
  /** Sessions and requests released on the evidence that they were over (README, "Release"). */
  releasedSessions: number;
  releasedRequests: number;
  /** Bytes held now to parse JSON bodies and SSE events (`maxHeldBytes` caps them). */
  heldBytes: number;
  /** JSON bodies passed on unparsed: over `maxJsonBodyBytes`, or past `maxHeldBytes`. */
  unparsedJsonBodies: number;
  /** SSE events passed on unparsed (oversized): over `maxHeldEventBytes`, or past `maxHeldBytes`. */
  oversizedEvents: number;
  /** A proxy's bodies passed on unobserved for their `Content-Encoding` (`StreamRecord.unread`). */
  unreadEncodedBodies: number;
}
