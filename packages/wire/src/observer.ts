import { BoundedMap } from './bounded-map.js';
import { isErrorResponse, isRequest, isResponse, parseMessages, requestTarget } from './jsonrpc.js';
import type { JsonRpcMessage, JsonRpcResponse } from './jsonrpc.js';
import { SseParser } from './sse.js';
import type { SseEvent } from './sse.js';
import type {
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

/**
 * The one observer of the Streamable HTTP wire. `wrap(fetch)` returns a fetch that reports every
 * request, response, SSE event and stream end to the listeners, keeping bounded per-session,
 * per-request and per-stream state that the listeners share.
 */
export class WireObserver {
  private readonly listeners: WireListener[] = [];
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
        session = newSession(sessionId, protocolVersion);
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
      session = newSession(sessionId, protocolVersion);
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
    const filtering = this.filtering;
    const kept: Uint8Array[] = [];
    const parser = new SseParser((event) => {
      if (this.handleSseEvent(request, stream, event) && filtering) kept.push(event.raw);
    });
    return this.pipeBody(request, stream, source, (chunk, controller) => {
      parser.push(chunk);
      if (!filtering) {
        controller.enqueue(chunk);
        return true;
      }
      if (kept.length === 0) return false;
      enqueueRuns(kept, controller);
      kept.length = 0;
      return true;
    }, (controller) => {
      const rest = parser.end();
      if (filtering && rest.length > 0) controller.enqueue(rest);
    });
  }

  private observeJson(request: WireRequest, stream: StreamRecord, source: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    const chunks: Uint8Array[] = [];
    let size = 0;
    return this.pipeBody(request, stream, source, (chunk, controller) => {
      size += chunk.length;
      if (size <= this.maxJsonBodyBytes) chunks.push(chunk);
      controller.enqueue(chunk);
      return true;
    }, () => {
      if (size > this.maxJsonBodyBytes) return;
      const messages = parseMessages(Buffer.concat(chunks).toString('utf8'));
      chunks.length = 0;
      if (messages.length > 0) this.dispatchEvent(request, stream, undefined, undefined, messages);
    });
  }

  /** A pull-driven copy of the body: nothing is read from the network before the client asks. */
  private pipeBody(
    request: WireRequest,
    stream: StreamRecord,
    source: ReadableStream<Uint8Array>,
    /** Returns whether anything was enqueued. */
    onChunk: (chunk: Uint8Array, controller: ReadableStreamDefaultController<Uint8Array>) => boolean,
    onCleanEnd: (controller: ReadableStreamDefaultController<Uint8Array>) => void,
  ): ReadableStream<Uint8Array> {
    const reader = source.getReader();
    const end = (how: StreamEnd, error: unknown): void => {
      if (stream.ended) return;
      stream.ended = how;
      stream.endedAt = this.now();
      for (const listener of this.listeners) listener.onStreamEnd?.(request, stream, how, error);
    };
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          // A pull that enqueues nothing is not called again, so read on until something is given
          // to the client (every event of a chunk may have been removed) or the body ends.
          for (;;) {
            let result: Awaited<ReturnType<typeof reader.read>>;
            try {
              result = await reader.read();
            } catch (error) {
              end(isAbort(error) ? 'abort' : 'error', error);
              controller.error(error);
              return;
            }
            if (result.done) {
              onCleanEnd(controller);
              end('clean', undefined);
              controller.close();
              return;
            }
            if (onChunk(result.value, controller)) return;
          }
        },
        cancel: async (reason) => {
          end('abort', reason);
          await reader.cancel(reason);
        },
      },
      { highWaterMark: 0 },
    );
  }

  /** Returns false when a listener removed the event. */
  private handleSseEvent(request: WireRequest, stream: StreamRecord, event: SseEvent): boolean {
    if (event.id !== undefined) {
      stream.lastEventId = event.id;
      for (const record of stream.requests) record.lastEventId = event.id;
    }
    let kept: boolean;
    if (event.hasData && !event.mayHoldId) {
      // No "id" member anywhere: not a request or a response, so no terminal to look for. The
      // messages (notifications) are parsed only if a listener asks for them.
      if (event.dataLength > 0) stream.messageEvents++;
      kept = this.notify(request, stream, event, event.id, undefined, NO_TERMINALS);
    } else {
      kept = this.dispatchEvent(request, stream, event, event.id, event.hasData ? parseMessages(event.data) : NO_MESSAGES);
    }
    kept ||= !this.filtering;
    if (kept && event.id !== undefined) {
      stream.deliveredEventId = event.id;
      const cursors = request.session?.cursors;
      if (cursors) {
        cursors.delete(event.id);
        if (cursors.set(event.id, stream).size > this.cursorsPerSession) cursors.delete(cursors.keys().next().value!);
      }
    }
    return kept;
  }

  private dispatchEvent(
    request: WireRequest,
    stream: StreamRecord,
    sse: SseEvent | undefined,
    eventId: string | undefined,
    messages: readonly JsonRpcMessage[],
  ): boolean {
    let terminals: TerminalObservation[] | undefined;
    if (messages.length > 0) {
      stream.messageEvents++;
      for (const message of messages) {
        if (!isResponse(message)) continue;
        const terminal = this.observeTerminal(stream, message);
        if (terminal) (terminals ??= []).push(terminal);
      }
    }
    return this.notify(request, stream, sse, eventId, messages, terminals ?? NO_TERMINALS);
  }

  /** Tells the listeners of an event; `messages` undefined means parsed on first read. */
  private notify(
    request: WireRequest,
    stream: StreamRecord,
    sse: SseEvent | undefined,
    eventId: string | undefined,
    messages: readonly JsonRpcMessage[] | undefined,
    terminals: readonly TerminalObservation[],
  ): boolean {
    const listeners = this.listeners;
    if (listeners.length === 0) return true;
    const event = new ObservedEvent(request, stream, sse, eventId, messages, terminals, this.now());
    let keep = true;
    for (const listener of listeners) if (listener.onEvent?.(event) === false) keep = false;
    if (!keep) for (const listener of listeners) listener.onEventDropped?.(event);
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

function newSession(id: string, protocolVersion: string | undefined): SessionRecord {
  return { id, initializedHere: false, protocolVersion, streams: [], lastStandalone: undefined, cursors: new Map(), used: false };
}

function lastEnded(session: SessionRecord): StreamRecord | undefined {
  for (let i = session.streams.length - 1; i >= 0; i--) if (session.streams[i]!.ended) return session.streams[i];
  return undefined;
}

class ObservedEvent implements WireEvent {
  constructor(
    readonly request: WireRequest,
    readonly stream: StreamRecord,
    readonly sse: SseEvent | undefined,
    readonly eventId: string | undefined,
    private parsed: readonly JsonRpcMessage[] | undefined,
    readonly terminals: readonly TerminalObservation[],
    readonly at: number,
  ) {}

  get messages(): readonly JsonRpcMessage[] {
    return (this.parsed ??= this.sse?.hasData ? parseMessages(this.sse.data) : NO_MESSAGES);
  }
}

/**
 * Enqueues kept event bytes, joining events that lie next to each other in one buffer (the usual case:
 * every event of a chunk kept) into one chunk, so the client reads once per network chunk, not per event.
 */
function enqueueRuns(raws: readonly Uint8Array[], controller: ReadableStreamDefaultController<Uint8Array>): void {
  let i = 0;
  while (i < raws.length) {
    const first = raws[i]!;
    let length = first.length;
    let j = i + 1;
    for (; j < raws.length; j++) {
      const next = raws[j]!;
      if (next.buffer !== first.buffer || next.byteOffset !== first.byteOffset + length) break;
      length += next.length;
    }
    controller.enqueue(j === i + 1 ? first : new Uint8Array(first.buffer, first.byteOffset, length));
    i = j;
  }
}

function requestKey(sessionId: string | undefined, id: string): string {
  return `${sessionId ?? ''}\n${id}`;
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}
