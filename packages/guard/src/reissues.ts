import { randomBytes, randomUUID } from 'node:crypto';
import { GuardAction, ProtocolEra, protocolEra } from '@resumewatch/semconv';
import {
  BrokenRequests,
  isInputRound,
  keyedArgumentsDigest,
  requestArgumentsDigest,
  requestIdempotencyKey,
  requestTarget,
  TOOLS_CALL_METHOD,
} from '@resumewatch/wire';
import type { JsonRpcRequest, RequestRecord, StreamEnd, WireRequest } from '@resumewatch/wire';
import type { BrokenAttempt, ReissueReport } from './reports.js';

/** What an application's own idempotency key is made from (`idempotencyKey` as a function). */
export interface IdempotencyKeyCall {
  readonly method: string;
  readonly name: string | undefined;
  /** The call's arguments, as the application passed them. */
  readonly arguments: unknown;
  readonly requestId: string | number;
}

export interface ReissueOptions {
  /** How long a broken request waits for its re-issue. Default DEFAULT_REISSUE_WINDOW_MS of the wire (10 min). */
  reissueWindowMs?: number;
  /** Makes an idempotency key for a call that re-issues nothing; default a random UUID. */
  makeIdempotencyKey?: (call: IdempotencyKeyCall) => string;
  onStreamBroken?(attempt: BrokenAttempt): void;
  onReissue?(report: ReissueReport): void;
}

/** A 2026-07-28 request in flight that names its work (a tool, prompt or resource). */
interface InFlight {
  readonly digest: string;
  readonly idempotencyKey: string | undefined;
  readonly attempt: number;
  readonly request: WireRequest;
}

/** Whether a request speaks the 2026-07-28 era: its `MCP-Protocol-Version`, the only era with re-issues. */
export function isStatelessEra(protocolVersion: string | undefined): boolean {
  return protocolEra(protocolVersion) === ProtocolEra.STATELESS;
}

function isAbortError(error: unknown): boolean {
  return (error as { name?: unknown } | null)?.name === 'AbortError';
}

/**
 * The guard's half of the 2026-07-28 era: notes the requests whose response stream broke before their
 * result, tells the application when it re-issues one (the wire's BrokenRequests matches them by keyed
 * digest), and gives a re-issue the idempotency key of the attempt it repeats. Decides nothing: a
 * re-issue always leaves, a result is never withheld.
 */
export class ReissueTracker {
  /** The digests never leave the guard: a key of its own, made per guard. */
  private readonly digestKey = randomBytes(32);
  private readonly inFlight = new WeakMap<RequestRecord, InFlight>();
  private readonly broken: BrokenRequests<BrokenAttempt>;
  private readonly options: ReissueOptions;
  private readonly now: () => number;

  constructor(options: ReissueOptions, maxEntries: number, now: () => number) {
    this.options = options;
    this.now = now;
    this.broken = new BrokenRequests({ windowMs: options.reissueWindowMs, maxEntries, now });
  }

  /** Broken requests waiting for their re-issue; how many the cap pushed out. */
  stats(): { brokenRequests: number; evictions: number } {
    return { brokenRequests: this.broken.size, evictions: this.broken.evictions };
  }

  /**
   * The idempotency key a `tools/call` about to be sent should carry: the one it already carries, the
   * key of the broken attempt it re-issues, or a new one. Undefined for other methods.
   */
  idempotencyKeyFor(message: JsonRpcRequest): string | undefined {
    // Only a tool call runs side effects: the only method whose requests get an idempotency key.
    if (message.method !== TOOLS_CALL_METHOD) return undefined;
    const carried = requestIdempotencyKey(message);
    if (carried !== undefined) return carried;
    if (!isInputRound(message)) {
      const inherited = this.broken.peek(requestArgumentsDigest(message, this.digestKey))?.idempotencyKey;
      if (inherited !== undefined) return inherited;
    }
    const make = this.options.makeIdempotencyKey;
    if (make === undefined) return randomUUID();
    return make({
      method: message.method,
      name: requestTarget(message),
      arguments: message.params?.arguments,
      requestId: message.id,
    });
  }

  /** A request before it leaves: a re-issue of a broken one is reported (never held back). */
  onRequest(request: WireRequest): void {
    if (request.requests.length === 0 || !isStatelessEra(request.protocolVersion)) return;
    for (const record of request.requests) {
      // Only a request that names its work can be re-issued (tools/call, prompts/get, resources/read):
      // the observer digested that work when it described the request (the record keeps no body).
      if (record.workDigest === undefined) continue;
      const digest = keyedArgumentsDigest(record.workDigest, this.digestKey);
      const idempotencyKey = record.idempotencyKey;
      // A Multi Round-Trip round goes on with its call: it never re-issues one.
      const first = record.inputRound ? undefined : this.broken.takeReissued(digest);
      const attempt = first === undefined ? 1 : first.attempt + 1;
      this.inFlight.set(record, { digest, idempotencyKey, attempt, request });
      if (first === undefined) continue;
      request.guardAction ??= GuardAction.REISSUE_REPORTED;
      this.options.onReissue?.({
        action: GuardAction.REISSUE_REPORTED,
        method: record.method,
        name: record.target,
        argumentsDigest: digest,
        firstAttempt: first,
        reissue: { requestId: record.id, idempotencyKey, attempt, request },
      });
    }
  }

  /** The requests' exchange is over: those without their result lost it (unless the client gave them up). */
  ended(records: readonly RequestRecord[], streamEnd: StreamEnd | undefined, givenUp: boolean): void {
    for (const record of records) {
      const pending = this.inFlight.get(record);
      if (pending === undefined) continue;
      this.inFlight.delete(record);
      if (givenUp || record.terminalCount > 0) continue;
      const broken: BrokenAttempt = {
        requestId: record.id,
        method: record.method,
        name: record.target,
        startedAt: record.startedAt,
        brokenAt: this.now(),
        streamEnd,
        idempotencyKey: pending.idempotencyKey,
        attempt: pending.attempt,
        request: pending.request,
      };
      this.broken.noteBroken(pending.digest, broken);
      this.options.onStreamBroken?.(broken);
    }
  }

  /** The fetch failed without a response: the request may have reached the server, unless it was aborted. */
  fetchFailed(request: WireRequest, error: unknown): void {
    this.ended(request.requests, undefined, isAbortError(error));
  }
}
