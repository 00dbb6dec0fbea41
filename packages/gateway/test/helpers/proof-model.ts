import type { ProofUpstream, WrittenEvent } from './proof-upstream.js';
import type { Step } from './proof-schedule.js';
import type { ReadResponse } from './socket-client.js';
import { completeEvents, messagesOf } from './sse-events.js';

/** What happened, in the client's order: the runner writes it, the model judges it. */
export type TraceEntry =
  /** A step's request was written on connection `conn` (`pipelined`: before the previous response on it was read). */
  | { kind: 'sent'; step: number; conn: number; pipelined: boolean; cursor?: string; resumes?: number }
  | { kind: 'skipped'; step: number; why: string }
  | { kind: 'read'; step: number; conn: number; response: ReadResponse }
  /** Never read: the client destroyed the connection before this response. */
  | { kind: 'unread'; step: number; conn: number }
  | { kind: 'connection'; conn: number; problem: string }
  | { kind: 'hang'; step: number; problem: string };

export interface Violation {
  invariant: keyof typeof INVARIANTS;
  text: string;
}

export interface Judgement {
  violations: Violation[];
  /** The trace, one line per entry, with the proofs as they were given. */
  lines: string[];
  /** The gateway's actions that had proof: 405s and removed results. */
  acted: { refusals: number; removals: number };
}

const INVARIANTS = {
  1: 'every result the upstream produced reaches the application, unless proof shows the client had it',
  2: 'a 405, and a result missing from a response, only with proof of receipt',
  3: 'every keep-alive connection stays in step (exact framing, no leftover bytes)',
  /** Not one of the issue's invariants: what lets the run go on (a gateway that leaks an exchange breaks it). */
  settled: 'every exchange ends once its client and its upstream are done',
} as const;

/** A JSON-RPC id as a request key: `1` and `"1"` are different requests. */
function requestKey(id: unknown): string | undefined {
  return typeof id === 'number' || typeof id === 'string' ? JSON.stringify(id) : undefined;
}

/** The request a message is the result (or error) of, if it is one. */
function resultOf(message: unknown): string | undefined {
  if (typeof message !== 'object' || message === null || 'method' in message) return undefined;
  return 'result' in message || 'error' in message ? requestKey((message as { id?: unknown }).id) : undefined;
}

function describe(message: unknown): string {
  const key = resultOf(message);
  if (key !== undefined) return `the result of ${key}`;
  const method = (message as { method?: unknown } | null)?.method;
  return typeof method === 'string' ? method : JSON.stringify(message);
}

/** An event as the client's application got it. */
interface AppEvent {
  id: string | undefined;
  messages: unknown[];
}

/**
 * The model: what the client received and which proofs of receipt it gave, from the trace alone. A
 * proof that the client holds request R's result is (1) a Last-Event-ID at or after an event of the
 * same stream that carries R's result, or (2) the client's next request on a connection after the
 * response carrying R's result was read whole, on a connection that never pipelined. Nothing else.
 * Then: a 405 needs proof for the resumed stream's request; every message the upstream wrote that the
 * client lacks though it read past it (or the whole response) must be a result with proof; the
 * connection problems the client's strict reader saw break invariant 3.
 */
export function judge(steps: readonly Step[], trace: readonly TraceEntry[], upstream: ProofUpstream): Judgement {
  const violations: Violation[] = [];
  const acted = { refusals: 0, removals: 0 };
  const lines: string[] = [];
  /** Request key → the proof that the client holds its result. */
  const proven = new Map<string, string>();
  /** Results the application got. */
  const received = new Set<string>();
  /** Results whose loss is the gateway's (refused or removed without proof): invariant 1 if never received. */
  const lost: { key: string; how: string }[] = [];
  const connections = new Map<number, { pipelined: boolean; lastWhole?: { step: number; results: string[] } }>();
  const resumed = new Map<number, { call: number; cursor: string }>();
  const connection = (id: number) => connections.get(id) ?? connections.set(id, { pipelined: false }).get(id)!;
  const violate = (invariant: Violation['invariant'], text: string) => violations.push({ invariant, text });
  const prove = (key: string, how: string) => {
    if (proven.has(key)) return;
    proven.set(key, how);
    lines.push(`    proof for ${key}: ${how}`);
  };

  for (const entry of trace) {
    const n = entry.kind === 'connection' ? -1 : entry.step;
    switch (entry.kind) {
      case 'sent': {
        const c = connection(entry.conn);
        lines.push(
          `  #${n} → conn ${entry.conn}${entry.pipelined ? ' (pipelined)' : ''}${entry.cursor ? `, Last-Event-ID ${entry.cursor} (#${entry.resumes}'s stream)` : ''}`,
        );
        if (entry.pipelined) c.pipelined = true;
        else if (!c.pipelined && c.lastWhole)
          for (const key of c.lastWhole.results)
            prove(key, `#${n} came next on conn ${entry.conn}, after #${c.lastWhole.step}'s response was read whole`);
        if (entry.cursor !== undefined) {
          resumed.set(n, { call: entry.resumes!, cursor: entry.cursor });
          for (const event of upstream.upTo(entry.cursor) ?? [])
            for (const message of event.messages) {
              const key = resultOf(message);
              if (key !== undefined)
                prove(key, `#${n}'s Last-Event-ID ${entry.cursor} is at or after event ${event.id}, which carries it`);
            }
        }
        break;
      }
      case 'skipped':
        lines.push(`  #${n} skipped: ${entry.why}`);
        break;
      case 'unread':
        lines.push(`  #${n} ← unread (conn ${entry.conn} destroyed before it)`);
        break;
      case 'hang':
        lines.push(`  #${n}: ${entry.problem}`);
        violate('settled', `after #${n}: ${entry.problem}`);
        break;
      case 'connection':
        lines.push(`  conn ${entry.conn}: ${entry.problem}`);
        violate(3, `conn ${entry.conn}: ${entry.problem}`);
        break;
      case 'read': {
        const c = connection(entry.conn);
        c.lastWhole = undefined;
        const { response } = entry;
        const status = response.head?.status;
        const app = appEvents(response);
        const shown = app.map((e) => `${e.id ?? 'json'}[${e.messages.map(describe).join(', ')}]`).join(' ');
        lines.push(
          `  #${n} ← ${status ?? 'no head'}, ${response.end}${response.problem ? ` (${response.problem})` : ''}, ${response.bytes} bytes${shown ? `: ${shown}` : ''}`,
        );
        if (response.end === 'framing' || response.end === 'stalled' || response.end === 'timeout')
          violate(3, `#${n}'s response on conn ${entry.conn}: ${response.end}: ${response.problem}`);
        if (status === undefined) break;
        const results = app.flatMap((e) => e.messages.map(resultOf)).filter((k): k is string => k !== undefined);
        for (const key of results) received.add(key);
        if (response.end === 'complete') c.lastWhole = { step: n, results };
        if (status === 405) {
          const resume = resumed.get(n);
          if (resume === undefined) {
            violate(2, `#${n}: 405 to a ${steps[n]!.kind}, which is no resume`);
            break;
          }
          const key = requestKey((steps[resume.call] as { id: unknown }).id)!;
          if (proven.has(key)) acted.refusals++;
          else {
            violate(
              2,
              `#${n}: 405 to the resume of #${resume.call}'s stream (request ${key}, Last-Event-ID ${resume.cursor}) with no proof the client had its result`,
            );
            lost.push({ key, how: `#${n} refused the resume of its stream (405)` });
          }
          break;
        }
        if (status !== 200) {
          violate(1, `#${n}: status ${status} where the upstream answered 200`);
          break;
        }
        const served = upstream.served.get(n);
        const written = served ? served.events.filter((e) => e.end <= served.written) : [];
        const wrote = written.map((e) => `${e.id ?? 'json'}[${e.messages.map(describe).join(', ')}]`).join(' ');
        lines.push(
          `    the upstream wrote: ${wrote || 'no complete event'}${served?.cut ? ` (cut after ${served.written} body bytes)` : ''}`,
        );
        compare(n, written, app, response.end === 'complete');
        break;
      }
    }
  }
  for (const { key, how } of lost)
    if (!received.has(key)) violate(1, `the result of ${key} never reached the application: ${how} without proof`);
  return { violations, lines, acted };

  /**
   * The events the upstream wrote (`written`, complete ones) against those the application got: in
   * order, each got event one the upstream wrote, its messages among the upstream's; every message
   * the client lacks before the last event it got (or anywhere, when it read the response whole) is
   * a removal, which only a result with proof may be.
   */
  function compare(n: number, written: WrittenEvent[], app: AppEvent[], whole: boolean): void {
    let next = 0;
    for (const got of app) {
      const at = written.findIndex((e, i) => i >= next && e.id === got.id);
      if (at < 0) {
        violate(
          1,
          `#${n}: the client got event ${got.id ?? '(json)'} [${got.messages.map(describe).join(', ')}], which the upstream did not write there`,
        );
        continue;
      }
      for (let i = next; i < at; i++) removedEvent(n, written[i]!);
      const wrote = written[at]!.messages.map((m) => JSON.stringify(m));
      let from = 0;
      for (const message of got.messages) {
        const found = wrote.indexOf(JSON.stringify(message), from);
        if (found < 0) {
          violate(
            1,
            `#${n}: event ${got.id ?? '(json)'} carries ${JSON.stringify(message)}, which the upstream did not write there`,
          );
          continue;
        }
        for (let j = from; j < found; j++) removed(n, written[at]!.messages[j], got.id);
        from = found + 1;
      }
      for (let j = from; j < wrote.length; j++) removed(n, written[at]!.messages[j], got.id);
      next = at + 1;
    }
    if (whole) for (let i = next; i < written.length; i++) removedEvent(n, written[i]!);
  }

  function removedEvent(n: number, event: WrittenEvent): void {
    if (event.messages.length === 0) violate(1, `#${n}: event ${event.id} (no message) is missing`);
    for (const message of event.messages) removed(n, message, event.id);
  }

  function removed(n: number, message: unknown, eventId: string | undefined): void {
    const key = resultOf(message);
    const where = eventId === undefined ? 'the JSON body' : `event ${eventId}`;
    if (key === undefined) violate(1, `#${n}: ${describe(message)} of ${where} is missing, and it is no result`);
    else if (proven.has(key)) {
      acted.removals++;
      lines.push(`    #${n} removed the result of ${key} (${where}): proven`);
    } else {
      violate(2, `#${n}: the result of ${key} (${where}) is missing with no proof the client had it`);
      lost.push({ key, how: `#${n} removed it from ${where}` });
    }
  }
}

/** What the application parsed from a response: complete SSE events, or a JSON body read whole. */
function appEvents(response: ReadResponse): AppEvent[] {
  if (response.head?.status !== 200) return [];
  const type = response.head.headers.find(([name]) => name.toLowerCase() === 'content-type')?.[1] ?? '';
  const body = response.body.toString('utf8');
  if (type.includes('text/event-stream'))
    return completeEvents(body).map((e) => ({ id: e.id, messages: messagesOf(e.data) }));
  return response.end === 'complete' ? [{ id: undefined, messages: messagesOf(body) }] : [];
}

/** A failure's report: the broken invariants, the schedule, and the trace with the proofs. */
export function report(violations: readonly Violation[], schedule: string, lines: readonly string[]): string {
  const broken = violations.map((v) => `invariant ${v.invariant} (${INVARIANTS[v.invariant]}) broken: ${v.text}`);
  return [...broken, 'schedule:', schedule, 'trace:', ...lines].join('\n');
}
