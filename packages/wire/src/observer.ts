import { BoundedMap } from './bounded-map.js';
import { isErrorResponse, isRequest, isResponse, parseMessages, requestTarget } from './jsonrpc.js';
import type { JsonRpcMessage, JsonRpcResponse } from './jsonrpc.js';
import { ScannedEvent, SseScanner } from './sse.js';
import type { SseSink } from './sse.js';
import type {
  CursorMemory,
  ReattachInfo,
  RequestRecord,
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
} from './types.js';

export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

const HEADER_SESSION_ID = 'mcp-session-id';
const HEADER_LAST_EVENT_ID = 'last-event-id';
const HEADER_PROTOCOL_VERSION = 'mcp-protocol-version';
const NO_MESSAGES: readonly JsonRpcMessage[] = [];
const NO_TERMINALS: readonly TerminalObservation[] = [];
const NO_BYTES = new Uint8Array(0);

/**
 * The one observer of the Streamable HTTP wire. `wrap(fetch)` returns a fetch that reports every
 * request, response, SSE event and stream end to the listeners, keeping bounded per-session,
 * per-request and per-stream state that the listeners share.
 */
export class WireObserver {
  private readonly listeners: WireListener[] = [];
  /** The listeners with an onEvent hook: without any, no event objects are made. */
  private readonly eventListeners: WireListener[] = [];
  private readonly sessions: BoundedMap<string, SessionRecord>;
  private readonly requests: BoundedMap<string, RequestRecord>;
  private readonly streamsPerSession: number;
  private readonly cursorsPerSession: number;
  private readonly maxJsonBodyBytes: number;
  private readonly now: () => number;
  private requestSeq = 0;
  private streamSeq = 0;
  /** The session an initialize response assigned, by the stream that carries the response. */
  private readonly initializeStreams = new WeakMap<StreamRecord, SessionRecord>();
  /** Set when any listener may drop events: bodies are then forwarded event by event. */
  private filtering = false;

  constructor(options: WireObserverOptions = {}) {
    this.now = options.now ?? Date.now;
    this.sessions = new BoundedMap(options.maxSessions ?? 10_000, options.sessionRetentionMs ?? 3_600_000, this.now);
    this.requests = new BoundedMap(options.maxRequests ?? 100_000, options.requestRetentionMs ?? 600_000, this.now);
    this.streamsPerSession = options.streamsPerSession ?? 32;
    this.cursorsPerSession = options.cursorsPerSession ?? 256;
    this.maxJsonBodyBytes = options.maxJsonBodyBytes ?? 8 * 1024 * 1024;
  }

  /** Adds a listener. `filters: true` declares that its onEvent may return false. */
  addListener(listener: WireListener, { filters = false }: { filters?: boolean } = {}): this {
    this.listeners.push(listener);
    if (listener.onEvent) this.eventListeners.push(listener);
    if (filters) this.filtering = true;
    return this;
  }

  getSession(sessionId: string): SessionRecord | undefined {
    return this.sessions.get(sessionId);
  }

  getRequest(sessionId: string | undefined, id: string | number): RequestRecord | undefined {
    return this.requests.get(requestKey(sessionId, String(id)));
  }

  /** Sessions and requests currently held, and how many the caps pushed out. */
  stats(): { sessions: number; requests: number; evictions: number } {
    return {
      sessions: this.sessions.size,
      requests: this.requests.size,
      evictions: this.sessions.evictions + this.requests.evictions,
    };
  }

  wrap(fetchImpl: FetchLike = globalThis.fetch): FetchLike {
    return (input, init) => this.observe(fetchImpl, input, init);
  }

  private async observe(fetchImpl: FetchLike, input: string | URL | Request, init: RequestInit | undefined): Promise<Response> {
    const request = this.describeRequest(input, init);
    try {
      for (const listener of this.listeners) listener.onRequest?.(request);
    } catch (error) {
      for (const listener of this.listeners) listener.onRefused?.(request, error);
      throw error;
    }
    let response: Response;
    try {
      response = await fetchImpl(input, init);
    } catch (error) {
      for (const listener of this.listeners) listener.onFetchError?.(request, error);
      throw error;
    }
    return this.observeResponse(request, response);
  }

  private describeRequest(input: string | URL | Request, init: RequestInit | undefined): WireRequest {
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    const httpMethod = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const url = input instanceof Request ? input.url : String(input);
    const sessionId = headers.get(HEADER_SESSION_ID) ?? undefined;
    const lastEventId = headers.get(HEADER_LAST_EVENT_ID) ?? undefined;
    const protocolVersion = headers.get(HEADER_PROTOCOL_VERSION) ?? undefined;
    const messages = typeof init?.body === 'string' ? parseMessages(init.body) : NO_MESSAGES;
    const startedAt = this.now();

    let session: SessionRecord | undefined;
    if (sessionId !== undefined) {
      session = this.sessions.get(sessionId);
      if (!session) {
        session = newSession(sessionId, protocolVersion, this.cursorsPerSession);
        this.sessions.set(sessionId, session);
      } else {
        this.sessions.touch(sessionId);
      }
      if (protocolVersion) session.protocolVersion = protocolVersion;
    }

    const requests: RequestRecord[] = [];
    for (const message of messages) {
      if (!isRequest(message)) continue;
      const id = String(message.id);
      const key = requestKey(sessionId, id);
      const record: RequestRecord = {
        key,
        sessionId: sessionId ?? '',
        id,
        method: message.method,
        target: requestTarget(message),
        message,
        startedAt,
        terminalCount: 0,
        firstTerminalStream: undefined,
        lastEventId: undefined,
      };
      this.requests.set(key, record);
      requests.push(record);
    }

    const resume = lastEventId !== undefined ? this.describeResume(session, lastEventId) : undefined;
    const reattach = session ? this.describeReattach(session, httpMethod, resume) : undefined;
    if (session) session.used = true;

    return {
      seq: ++this.requestSeq,
      httpMethod,
      url,
      sessionId,
      protocolVersion: protocolVersion ?? session?.protocolVersion,
      session,
      messages,
      requests,
      resume,
      reattach,
      startedAt,
    };
  }

  private describeResume(session: SessionRecord | undefined, lastEventId: string): ResumeInfo {
    let from: StreamRecord | undefined;
    if (session) {
      for (let i = session.streams.length - 1; i >= 0; i--) {
        const stream = session.streams[i]!;
        if (stream.lastEventId === lastEventId || stream.deliveredEventId === lastEventId) {
          from = stream;
          break;
        }
      }
      from ??= session.cursors.get(lastEventId);
    }
    const requests = from?.requests ?? [];
    return { lastEventId, from, requests, terminalObserved: requests.some((r) => r.terminalCount > 0) };
  }

  private describeReattach(session: SessionRecord, httpMethod: string, resume: ResumeInfo | undefined): ReattachInfo | undefined {
    if (!session.initializedHere && !session.used) return { trigger: 'new_transport', previous: undefined };
    if (httpMethod !== 'GET') return undefined;
    const previous = resume ? (resume.from ?? lastEnded(session)) : session.lastStandalone;
    if (!previous || (!resume && previous.ended === undefined)) return undefined;
    return { trigger: previous.ended === 'clean' ? 'stream_closed' : 'stream_error', previous };
  }

  private observeResponse(request: WireRequest, response: Response): Response {
    const contentType = response.headers.get('content-type') ?? '';
    const sessionId = response.headers.get(HEADER_SESSION_ID) ?? request.sessionId;
    const initialized =
      sessionId !== undefined && request.sessionId === undefined && request.requests.some((r) => r.method === 'initialize')
        ? this.initializedSession(sessionId, request.protocolVersion)
        : undefined;

    const kind = contentType.includes('text/event-stream') ? 'sse' : contentType.includes('application/json') ? 'json' : undefined;
    const stream = kind && response.body ? this.openStream(request, kind) : undefined;
    if (stream && initialized) this.initializeStreams.set(stream, initialized);
    const wireResponse: WireResponse = { status: response.status, contentType, sessionId, stream };
    for (const listener of this.listeners) listener.onResponse?.(request, wireResponse);
    if (!stream || !response.body) return response;

    const body = kind === 'sse' ? this.observeSse(request, stream, response.body) : this.observeJson(request, stream, response.body);
    const observed = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
    Object.defineProperty(observed, 'url', { value: response.url });
    Object.defineProperty(observed, 'redirected', { value: response.redirected });
    return observed;
  }

  private initializedSession(sessionId: string, protocolVersion: string | undefined): SessionRecord {
    let session = this.sessions.get(sessionId);
    if (!session) {
      session = newSession(sessionId, protocolVersion, this.cursorsPerSession);
      this.sessions.set(sessionId, session);
    }
    session.initializedHere = true;
    return session;
  }

  private openStream(request: WireRequest, kind: 'sse' | 'json'): StreamRecord {
    const session = request.session;
    const stream: StreamRecord = {
      id: `${++this.streamSeq}`,
      sessionId: request.sessionId ?? '',
      httpMethod: request.httpMethod,
      kind,
      requests: request.resume ? [...request.resume.requests] : [...request.requests],
      resumedFrom: request.resume?.from,
      isResume: request.resume !== undefined,
      openedAt: this.now(),
      lastEventId: undefined,
      deliveredEventId: request.resume?.lastEventId,
      messageEvents: 0,
      terminalEvents: 0,
      ended: undefined,
      endedAt: undefined,
    };
    if (session) {
      session.streams.push(stream);
      if (session.streams.length > this.streamsPerSession) session.streams.shift();
      if (request.httpMethod === 'GET' && !request.resume) session.lastStandalone = stream;
    }
    return stream;
  }

  private observeSse(request: WireRequest, stream: StreamRecord, source: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    return this.tapBody(request, stream, source, new SseTap(this, request, stream, this.filtering));
  }

  private observeJson(request: WireRequest, stream: StreamRecord, source: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    return this.tapBody(request, stream, source, new JsonTap(this, request, stream, this.maxJsonBodyBytes));
  }

  /** A pull-driven copy of the body: nothing is read from the network before the client asks. */
  private tapBody(request: WireRequest, stream: StreamRecord, source: ReadableStream<Uint8Array>, tap: BodyTap): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>(new TappedSource(this, request, stream, source, tap), { highWaterMark: 0 });
  }

  /** @internal Tells the listeners how a body ended (once). */
  streamEnded(request: WireRequest, stream: StreamRecord, how: StreamEnd, error: unknown): void {
    if (stream.ended) return;
    stream.ended = how;
    stream.endedAt = this.now();
    for (const listener of this.listeners) listener.onStreamEnd?.(request, stream, how, error);
  }

  /** @internal */
  clock(): number {
    return this.now();
  }

  /** @internal Observes an SSE event; returns false when a listener removed it. */
  sseEvent(request: WireRequest, stream: StreamRecord, scan: SseScanner, at: number): boolean {
    const id = scan.id;
    if (id !== undefined) {
      stream.lastEventId = id;
      const records = stream.requests;
      for (let i = 0; i < records.length; i++) records[i]!.lastEventId = id;
    }
    let kept: boolean;
    if (scan.hasData && !scan.mayHoldId) {
      // No "id" member anywhere: not a request or a response, so no terminal to look for. The
      // messages (notifications) are parsed only if a listener asks for them.
      if (scan.dataLength > 0) stream.messageEvents++;
      kept = this.eventListeners.length === 0 || this.notify(new SseWireEvent(scan, request, stream, undefined, undefined, NO_TERMINALS, at));
    } else {
      const data = scan.hasData ? scan.decodeData() : undefined;
      const messages = data !== undefined ? parseMessages(data) : NO_MESSAGES;
      const terminals = this.terminalsOf(stream, messages);
      kept = this.eventListeners.length === 0 || this.notify(new SseWireEvent(scan, request, stream, data, messages, terminals, at));
    }
    kept ||= !this.filtering;
    if (kept && id !== undefined) {
      stream.deliveredEventId = id;
      (request.session?.cursors as CursorRing | undefined)?.add(id, stream);
    }
    return kept;
  }

  /** Counts a message event and observes the terminals among its messages. */
  private terminalsOf(stream: StreamRecord, messages: readonly JsonRpcMessage[]): readonly TerminalObservation[] {
    if (messages.length === 0) return NO_TERMINALS;
    stream.messageEvents++;
    let terminals: TerminalObservation[] | undefined;
    for (const message of messages) {
      if (!isResponse(message)) continue;
      const terminal = this.observeTerminal(stream, message);
      if (terminal) (terminals ??= []).push(terminal);
    }
    return terminals ?? NO_TERMINALS;
  }

  /** @internal Observes the messages of a JSON body. */
  jsonBody(request: WireRequest, stream: StreamRecord, messages: readonly JsonRpcMessage[]): void {
    const terminals = this.terminalsOf(stream, messages);
    if (this.eventListeners.length > 0) this.notify(new JsonWireEvent(request, stream, messages, terminals, this.now()));
  }

  private notify(event: WireEvent): boolean {
    const listeners = this.eventListeners;
    let keep = true;
    for (let i = 0; i < listeners.length; i++) if (listeners[i]!.onEvent!(event) === false) keep = false;
    if (!keep) for (const listener of this.listeners) listener.onEventDropped?.(event);
    return keep;
  }

  private observeTerminal(stream: StreamRecord, message: JsonRpcResponse): TerminalObservation | undefined {
    if (message.id === null) return undefined;
    const id = String(message.id);
    let record = stream.requests.find((r) => r.id === id);
    if (!record) {
      record = this.requests.get(requestKey(stream.sessionId, id));
      if (!record) return undefined;
      stream.requests.push(record);
    }
    const duplicate = record.terminalCount > 0;
    record.terminalCount++;
    if (!duplicate) record.firstTerminalStream = stream;
    stream.terminalEvents++;
    this.requests.touch(record.key);
    if (record.method === 'initialize' && 'result' in message) this.noteProtocolVersion(stream, message.result);
    const error = isErrorResponse(message);
    return {
      request: record,
      outcome: error ? 'error' : 'result',
      errorCode: error ? message.error.code : undefined,
      duplicate,
      delivery: stream.isResume ? 'replay' : 'live',
    };
  }

  private noteProtocolVersion(stream: StreamRecord, result: unknown): void {
    const session = this.initializeStreams.get(stream);
    const version = (result as { protocolVersion?: unknown } | null)?.protocolVersion;
    if (session && typeof version === 'string') session.protocolVersion ??= version;
  }
}

function newSession(id: string, protocolVersion: string | undefined, cursors: number): SessionRecord {
  return { id, initializedHere: false, protocolVersion, streams: [], lastStandalone: undefined, cursors: new CursorRing(cursors), used: false };
}

/** The last `cap` deliveries in a ring: two array writes per event, a scan only when a cursor is placed. */
class CursorRing implements CursorMemory {
  private readonly ids: string[] = [];
  private readonly streams: StreamRecord[] = [];
  private next = 0;

  constructor(private readonly cap: number) {}

  get size(): number {
    return this.ids.length;
  }

  add(id: string, stream: StreamRecord): void {
    if (this.ids.length < this.cap) {
      this.ids.push(id);
      this.streams.push(stream);
      return;
    }
    this.ids[this.next] = id;
    this.streams[this.next] = stream;
    this.next = this.next + 1 === this.cap ? 0 : this.next + 1;
  }

  get(eventId: string): StreamRecord | undefined {
    const n = this.ids.length;
    for (let k = 1; k <= n; k++) {
      const i = (this.next - k + n) % n;
      if (this.ids[i] === eventId) return this.streams[i];
    }
    return undefined;
  }

  keys(): IterableIterator<string> {
    const n = this.ids.length;
    const seen = new Set<string>();
    const newestFirst: string[] = [];
    for (let k = 1; k <= n; k++) {
      const id = this.ids[(this.next - k + n) % n]!;
      if (!seen.has(id)) {
        seen.add(id);
        newestFirst.push(id);
      }
    }
    return newestFirst.reverse().values();
  }
}

function lastEnded(session: SessionRecord): StreamRecord | undefined {
  for (let i = session.streams.length - 1; i >= 0; i--) if (session.streams[i]!.ended) return session.streams[i];
  return undefined;
}

class JsonWireEvent implements WireEvent {
  readonly sse = undefined;
  readonly eventId = undefined;

  constructor(
    readonly request: WireRequest,
    readonly stream: StreamRecord,
    readonly messages: readonly JsonRpcMessage[],
    readonly terminals: readonly TerminalObservation[],
    readonly at: number,
  ) {}
}

/** An SSE event as the listeners see it: the wire event and the SSE event in one object. */
class SseWireEvent extends ScannedEvent implements WireEvent {
  constructor(
    scan: SseScanner,
    readonly request: WireRequest,
    readonly stream: StreamRecord,
    data: string | undefined,
    private parsed: readonly JsonRpcMessage[] | undefined,
    readonly terminals: readonly TerminalObservation[],
    readonly at: number,
  ) {
    super(scan, data);
  }

  get sse(): this {
    return this;
  }

  get eventId(): string | undefined {
    return this.id;
  }

  get messages(): readonly JsonRpcMessage[] {
    return (this.parsed ??= this.hasData ? parseMessages(this.data) : NO_MESSAGES);
  }
}

/** Sees each chunk of a body before the client does, and its clean end. */
interface BodyTap {
  /** Returns whether anything was enqueued. */
  chunk(chunk: Uint8Array, controller: ReadableStreamDefaultController<Uint8Array>): boolean;
  end(controller: ReadableStreamDefaultController<Uint8Array>): void;
}

/**
 * The underlying source of an observed body. The hot path goes through methods of a few classes
 * rather than closures made per stream, so its optimised code outlives each stream.
 */
class TappedSource {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;

  constructor(
    private readonly observer: WireObserver,
    private readonly request: WireRequest,
    private readonly stream: StreamRecord,
    source: ReadableStream<Uint8Array>,
    private readonly tap: BodyTap,
  ) {
    this.reader = source.getReader();
  }

  async pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    // A pull that enqueues nothing is not called again, so read on until something is given to the
    // client (every event of a chunk may have been removed) or the body ends.
    for (;;) {
      let result: Awaited<ReturnType<typeof this.reader.read>>;
      try {
        result = await this.reader.read();
      } catch (error) {
        this.observer.streamEnded(this.request, this.stream, isAbort(error) ? 'abort' : 'error', error);
        controller.error(error);
        return;
      }
      if (result.done) {
        this.tap.end(controller);
        this.observer.streamEnded(this.request, this.stream, 'clean', undefined);
        controller.close();
        return;
      }
      if (this.tap.chunk(result.value, controller)) return;
    }
  }

  async cancel(reason: unknown): Promise<void> {
    this.observer.streamEnded(this.request, this.stream, 'abort', reason);
    await this.reader.cancel(reason);
  }
}

class SseTap implements BodyTap, SseSink {
  private readonly scanner = new SseScanner(this);
  /**
   * When the chunk being scanned arrived: one clock read per chunk. A double from the start, as every
   * later value is, so the shape of SseTap instances never changes (see SHAPES).
   */
  private at = NaN;
  private out: ReadableStreamDefaultController<Uint8Array> | undefined;
  private chunkIn: Uint8Array = NO_BYTES;
  private enqueued = false;
  /** Kept event bytes not yet given to the client: one run of adjacent events in one buffer. */
  private runBytes: Uint8Array = NO_BYTES;
  private runStart = 0;
  private runEnd = 0;

  constructor(
    private readonly observer: WireObserver,
    private readonly request: WireRequest,
    private readonly stream: StreamRecord,
    private readonly filtering: boolean,
  ) {}

  chunk(chunk: Uint8Array, controller: ReadableStreamDefaultController<Uint8Array>): boolean {
    this.at = this.observer.clock();
    if (!this.filtering) {
      this.scanner.push(chunk);
      controller.enqueue(chunk);
      return true;
    }
    this.out = controller;
    this.chunkIn = chunk;
    this.enqueued = false;
    this.scanner.push(chunk);
    this.flush();
    this.runBytes = NO_BYTES;
    this.chunkIn = NO_BYTES;
    this.out = undefined;
    return this.enqueued;
  }

  /** Called by the scanner for each event. */
  event(scan: SseScanner): void {
    const kept = this.observer.sseEvent(this.request, this.stream, scan, this.at);
    if (!this.filtering || !kept) return;
    if (scan.bytes !== this.runBytes || scan.rawStart !== this.runEnd) {
      this.flush();
      this.runBytes = scan.bytes;
      this.runStart = scan.rawStart;
    }
    this.runEnd = scan.rawEnd;
  }

  end(controller: ReadableStreamDefaultController<Uint8Array>): void {
    const rest = this.scanner.end();
    if (this.filtering && rest.length > 0) controller.enqueue(rest);
  }

  private flush(): void {
    if (this.runEnd === this.runStart) return;
    const chunk = this.chunkIn;
    const bytes = this.runBytes;
    // Every event of the chunk kept and none carried over: the chunk itself, no view.
    const whole = this.runStart === 0 && this.runEnd === chunk.length && bytes.buffer === chunk.buffer && bytes.byteOffset === chunk.byteOffset;
    this.out!.enqueue(whole ? chunk : bytes.subarray(this.runStart, this.runEnd));
    this.runStart = this.runEnd = 0;
    this.enqueued = true;
  }
}

class JsonTap implements BodyTap {
  private readonly chunks: Uint8Array[] = [];
  private size = 0;

  constructor(
    private readonly observer: WireObserver,
    private readonly request: WireRequest,
    private readonly stream: StreamRecord,
    private readonly maxBytes: number,
  ) {}

  chunk(chunk: Uint8Array, controller: ReadableStreamDefaultController<Uint8Array>): boolean {
    this.size += chunk.length;
    if (this.size <= this.maxBytes) this.chunks.push(chunk);
    controller.enqueue(chunk);
    return true;
  }

  end(): void {
    if (this.size > this.maxBytes) return;
    const messages = parseMessages(Buffer.concat(this.chunks).toString('utf8'));
    this.chunks.length = 0;
    if (messages.length > 0) this.observer.jsonBody(this.request, this.stream, messages);
  }
}

function requestKey(sessionId: string | undefined, id: string): string {
  return `${sessionId ?? ''}\n${id}`;
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}

/**
 * One instance of each class on the hot path, alive as long as the module. V8 keeps the shape of a
 * class's instances only while some instance lives: after a full GC between bursts of streams (no
 * stream open), the shapes go, and every optimised function that relied on them is thrown away and
 * recompiled, at tens of milliseconds of CPU each, more than parsing thousands of events costs.
 */
const SHAPES: readonly object[] = (() => {
  const scanner = new SseScanner({ event: () => undefined });
  scanner.push(new TextEncoder().encode('id: 1\nevent: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'));
  const observer = new WireObserver();
  const request = {} as WireRequest;
  const stream = {} as StreamRecord;
  const cursors = new CursorRing(1);
  cursors.add('1', stream);
  return [
    scanner,
    new SseWireEvent(scanner, request, stream, undefined, undefined, NO_TERMINALS, Date.now()),
    new JsonWireEvent(request, stream, NO_MESSAGES, NO_TERMINALS, Date.now()),
    new SseTap(observer, request, stream, false),
    new JsonTap(observer, request, stream, 0),
    new TappedSource(observer, request, stream, new ReadableStream(), new JsonTap(observer, request, stream, 0)),
    cursors,
  ];
})();
