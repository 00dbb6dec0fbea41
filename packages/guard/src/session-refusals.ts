import { BoundedMap } from '@resumewatch/bounded';
import { HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, headerValue } from '@resumewatch/wire';
import type { FetchLike } from '@resumewatch/wire';
import type { RepeatedRefusal } from './reports.js';

/** How long a refusal is repeated (each one), unless the application initializes anew first. */
export const DEFAULT_REFUSAL_RETENTION_MS = 600_000;
/** The most bytes of a refusal's body kept to repeat; a longer body is not repeated (its requests go on). */
const MAX_REFUSAL_BODY_BYTES = 8 * 1024;
/** How long the guard reads a refusal's body; one still open then is not repeated. */
const REFUSAL_READ_MS = 5_000;

const DROPPED_HEADERS = new Set(['content-encoding', 'content-length', 'transfer-encoding']);
const INITIALIZE_METHOD = 'initialize';
/** A 400 refuses the session only when its body says so (server-everything: "No valid session ID provided"). */
const UNKNOWN_SESSION_TEXT =
  /no valid session|session (?:id )?not found|unknown session|invalid session|session (?:has )?(?:expired|terminated)/i;

/** The server's own answer, byte for byte, to repeat. */
interface Refusal {
  readonly status: number;
  readonly statusText: string;
  readonly headers: readonly [string, string][];
  readonly body: Uint8Array;
  readonly refusedAt: number;
  repeats: number;
}

/** While its body is read, later requests wait for it (bounded by REFUSAL_READ_MS): never a guess. */
type Entry = Refusal | Promise<Refusal | undefined>;

export interface SessionRefusalOptions {
  maxEntries: number;
  retentionMs: number;
  now: () => number;
  onDeadSession?: (report: RepeatedRefusal) => void;
  onListeningRefused?: (report: RepeatedRefusal) => void;
}

/** Whether a 400's body says the session is unknown (the text of a JSON-RPC error or plain text). */
function saysSessionUnknown(body: string): boolean {
  return UNKNOWN_SESSION_TEXT.test(body);
}

/** Reads at most `max` bytes of a body within `ms`; undefined when it is longer, slower or broken. */
async function readBounded(response: Response, max: number, ms: number): Promise<Uint8Array | undefined> {
  const reader = response.body?.getReader();
  if (reader === undefined) return new Uint8Array(0);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
    timer.unref?.();
  });
  const read = (async () => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > max) return undefined;
      chunks.push(value);
    }
    const bytes = new Uint8Array(size);
    let at = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, at);
      at += chunk.byteLength;
    }
    return bytes;
  })().catch(() => undefined);
  try {
    const bytes = await Promise.race([read, late]);
    if (bytes === undefined) void reader.cancel().catch(() => undefined);
    return bytes;
  } finally {
    clearTimeout(timer);
  }
}

function isInitialize(body: unknown): boolean {
  if (typeof body !== 'string' || !body.includes(`"${INITIALIZE_METHOD}"`)) return false;
  try {
    const message: unknown = JSON.parse(body);
    const messages = Array.isArray(message) ? message : [message];
    return messages.some(
      (m) => typeof m === 'object' && m !== null && (m as { method?: unknown }).method === INITIALIZE_METHOD,
    );
  } catch {
    return false;
  }
}

/**
 * The two loops clients fall into, stopped in process by repeating the server's own answer (never one of
 * the guard's making):
 * - a session the server refused (404 to a request carrying `Mcp-Session-Id`, or a 400 whose body says the
 *   session is unknown): further requests on it are answered with that status, headers and body, until
 *   the application initializes anew (an `initialize` always goes; its 2xx answer ends the refusals of
 *   its endpoint);
 * - a listening stream the server does not offer (405 to a GET): further GETs on that session (or, on a
 *   stateless server, that endpoint) are answered with that 405. A new initialize does not end it: the
 *   same server answers the same.
 * Each refusal is kept `retentionMs` at most, `maxEntries` of each kind. It sits outside the wire observer:
 * a local answer is never seen as a request.
 */
export class SessionRefusals {
  private readonly sessions: BoundedMap<string, Entry>;
  private readonly listening: BoundedMap<string, Entry>;
  /** Requests answered locally, of each kind. */
  private deadAnswers = 0;
  private listeningAnswers = 0;

  constructor(private readonly options: SessionRefusalOptions) {
    this.sessions = new BoundedMap<string, Entry>(options.maxEntries, options.retentionMs, options.now);
    this.listening = new BoundedMap<string, Entry>(options.maxEntries, options.retentionMs, options.now);
  }

  stats(): {
    refusedSessions: number;
    refusedListeningStreams: number;
    deadSessionAnswers: number;
    listeningRefusalAnswers: number;
    evictions: number;
  } {
    return {
      refusedSessions: this.sessions.size,
      refusedListeningStreams: this.listening.size,
      deadSessionAnswers: this.deadAnswers,
      listeningRefusalAnswers: this.listeningAnswers,
      evictions: this.sessions.evictions + this.listening.evictions,
    };
  }

  wrap(fetch: FetchLike): FetchLike {
    return async (input, init) => {
      const request = input instanceof Request ? input : undefined;
      const method = (init?.method ?? request?.method ?? 'GET').toUpperCase();
      const sessionId = headerValue(init?.headers ?? request?.headers, HEADER_SESSION_ID);
      const url = request ? request.url : String(input);
      const endpoint = url.split(/[?#]/, 1)[0]!;
      if (method === 'POST' && isInitialize(init?.body)) {
        const response = await fetch(input, init);
        // The application initialized anew: the sessions this endpoint refused are behind it.
        if (response.ok) this.sessions.deleteWhere((key) => key.startsWith(`${endpoint}\n`));
        return response;
      }
      const sessionKey = sessionId === undefined ? undefined : `${endpoint}\n${sessionId}`;
      const listeningKey = `${endpoint}\n${sessionId ?? ''}`;
      if (sessionKey !== undefined) {
        const local = await this.repeat(this.sessions, sessionKey, sessionId!, url, method, false);
        if (local) return local;
      }
      if (method === 'GET') {
        const local = await this.repeat(this.listening, listeningKey, sessionId, url, method, true);
        if (local) return local;
      }
      const response = await fetch(input, init);
      const status = response.status;
      // A 400 to a resume is about its cursor (the resume verdicts take it), not the session.
      const resume = headerValue(init?.headers ?? request?.headers, HEADER_LAST_EVENT_ID) !== undefined;
      const refused = status === 404 || (status === 400 && !resume);
      if (sessionKey !== undefined && refused && !this.sessions.has(sessionKey)) {
        this.remember(this.sessions, sessionKey, response, status === 400);
      } else if (method === 'GET' && status === 405 && !this.listening.has(listeningKey)) {
        this.remember(this.listening, listeningKey, response, false);
      }
      return response;
    };
  }

  /** Keeps the server's answer, read from a clone while the application reads the original. */
  private remember(map: BoundedMap<string, Entry>, key: string, response: Response, checkBody: boolean): void {
    const now = this.options.now;
    const headers: [string, string][] = [];
    // The body is kept decoded: a content-encoding or length of the wire would misdescribe it.
    response.headers.forEach((value, name) => {
      if (!DROPPED_HEADERS.has(name)) headers.push([name, value]);
    });
    const pending = readBounded(response.clone(), MAX_REFUSAL_BODY_BYTES, REFUSAL_READ_MS).then((body) => {
      const refused = body !== undefined && (!checkBody || saysSessionUnknown(new TextDecoder().decode(body)));
      const refusal: Refusal | undefined = refused
        ? { status: response.status, statusText: response.statusText, headers, body, refusedAt: now(), repeats: 0 }
        : undefined;
      if (map.get(key) === pending) {
        if (refusal) map.set(key, refusal);
        else map.delete(key);
      }
      return refusal;
    });
    map.set(key, pending);
  }

  private async repeat(
    map: BoundedMap<string, Entry>,
    key: string,
    sessionId: string | undefined,
    url: string,
    httpMethod: string,
    listening: boolean,
  ): Promise<Response | undefined> {
    const entry = map.get(key);
    if (entry === undefined) return undefined;
    const refusal = entry instanceof Promise ? await entry : entry;
    if (refusal === undefined) return undefined;
    refusal.repeats++;
    const report: RepeatedRefusal = {
      sessionId,
      url,
      httpMethod,
      status: refusal.status,
      refusedAt: refusal.refusedAt,
      repeats: refusal.repeats,
    };
    if (listening) {
      this.listeningAnswers++;
      this.options.onListeningRefused?.(report);
    } else {
      this.deadAnswers++;
      this.options.onDeadSession?.(report);
    }
    // A 204/205/304 carries no body; the others get the server's bytes.
    const empty = refusal.status === 204 || refusal.status === 205 || refusal.status === 304;
    return new Response(empty ? null : refusal.body.slice(), {
      status: refusal.status,
      statusText: refusal.statusText,
      headers: refusal.headers as [string, string][],
    });
  }
}
