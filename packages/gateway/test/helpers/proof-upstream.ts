import type { IncomingMessage, ServerResponse } from 'node:http';
import { startScriptedUpstream } from './scripted-upstream.js';
import type { SeenRequest } from './scripted-upstream.js';
import type { CallStep, Close, RequestId, Step, Variant } from './proof-schedule.js';

/** The session every schedule runs in (a fresh gateway per schedule). */
export const SESSION = 'sess-proof';

/** The header that tells the upstream which step of the schedule a request is. */
export const STEP_HEADER = 'x-schedule-step';

type Message = Record<string, unknown>;

/** One SSE event of a body (or a JSON body as one event without id), as the upstream wrote it. */
export interface WrittenEvent {
  id: string | undefined;
  messages: Message[];
  /** Offset just past the event in the body. */
  end: number;
}

/** What the upstream answered one step with. */
interface Served {
  format: 'sse' | 'json';
  events: WrittenEvent[];
  /** Body bytes written: the whole body, or those before the upstream's cut. */
  written: number;
  cut: boolean;
}

/** An event of a call's logical stream: its id, its messages as first produced, and whether its data is a batch. */
interface StreamEvent {
  id: string;
  messages: Message[];
  batch: boolean;
}

/** What a body is made of: events (SSE), or one message or batch without id (JSON). */
type Body = Omit<StreamEvent, 'id'> & { id: string | undefined };

/** A call's stream as the server holds it: every event it has for the call, in order, resumable from any id. */
interface LogicalStream {
  events: StreamEvent[];
  /** Index of the event carrying the call's result. */
  resultAt: number;
}

export interface ProofUpstream {
  /** The MCP endpoint, `http://127.0.0.1:<port>/mcp`. */
  readonly url: string;
  /** What each step was answered with, by step number (steps that never reached the upstream are absent). */
  readonly served: ReadonlyMap<number, Served>;
  /**
   * The event `id` names and the events of its stream up to it (what a cursor at `id` shows the client
   * had): the earliest event that bears the id, when several do (a cursor proves no more).
   */
  upTo(id: string): readonly StreamEvent[] | undefined;
  /** Responses not yet closed. */
  openResponses(): number;
  /** Whether step `n`'s request reached the upstream, and whether the upstream's response to it has closed. */
  answered(n: number): 'unseen' | 'open' | 'closed';
  close(): Promise<void>;
}

/** Which call each result message answers (for its replays). */
const resultOrigin = new WeakMap<Message, { id: RequestId; step: number }>();

/** The result of the call of step `step`: canonical, or as a replay of `variant`. */
function resultMessage(id: RequestId, step: number, variant: Variant = 'same'): Message {
  const content = [{ type: 'text', text: variant === 'other' ? `result of #${step}, again` : `result of #${step}` }];
  const result = variant === 'reordered' ? { isError: false, content } : { content, isError: false };
  const message = { jsonrpc: '2.0', id, result };
  resultOrigin.set(message, { id, step });
  return message;
}

const progressMessage = (step: number, n: number): Message => ({
  jsonrpc: '2.0',
  method: 'notifications/progress',
  params: { progressToken: `#${step}`, progress: n },
});
const listChanged: Message = { jsonrpc: '2.0', method: 'notifications/tools/list_changed' };

/** A replayed message: a result as `variant` of the original, anything else as it was. */
function replayed(message: Message, variant: Variant): Message {
  const origin = resultOrigin.get(message);
  return origin ? resultMessage(origin.id, origin.step, variant) : message;
}

/**
 * A Streamable HTTP server scripted by a schedule, on a real node:http server on 127.0.0.1: a POST
 * tools/call opens the call's logical stream (or answers JSON); a GET with Last-Event-ID replays the
 * events after the cursor with the step's variant of the results; a GET without one replays results of
 * earlier calls on the listening stream. Each answer is framed as the step says, written in one or two
 * writes, and cut (the response destroyed) after the step's number of body bytes.
 */
export async function startProofUpstream(steps: readonly Step[]): Promise<ProofUpstream> {
  const served = new Map<number, Served>();
  const streams = new Map<number, LogicalStream>();
  /** Each event id's call step and index in that call's stream. */
  const where = new Map<string, { step: number; index: number }>();
  /** The calls that reached the upstream, in order: what replays are taken from. */
  const calls: { step: number; id: RequestId }[] = [];
  let open = 0;
  const answers = new Map<number, 'open' | 'closed'>();

  const script = (req: IncomingMessage, res: ServerResponse, seen: SeenRequest): Promise<void> | void => {
    const n = Number(req.headers[STEP_HEADER]);
    open++;
    answers.set(n, 'open');
    res.once('close', () => {
      open--;
      answers.set(n, 'closed');
    });
    const step = steps[n];
    if (step === undefined) {
      res.writeHead(400).end();
      return;
    }
    if (step.kind === 'call') {
      const { id } = JSON.parse(seen.body.toString()) as { id: RequestId };
      const earlier = calls.length > 0 && step.foreign ? calls[step.foreign.of % calls.length] : undefined;
      calls.push({ step: n, id });
      if (step.format === 'json')
        return send(res, n, step, 'json', [{ id: undefined, messages: [resultMessage(id, n)], batch: false }]);
      const stream = callStream(n, step, id, earlier && { ...earlier, variant: step.foreign!.variant });
      streams.set(n, stream);
      // An id some events share names the earliest of them, for the server's replay as for the model's proof.
      stream.events.forEach((event, index) => {
        if (!where.has(event.id)) where.set(event.id, { step: n, index });
      });
      return send(res, n, step, 'sse', upToClose(stream, -1, step.close));
    }
    if (step.kind === 'resume') {
      const at = where.get(String(req.headers['last-event-id']));
      if (at === undefined) {
        res.writeHead(404).end();
        return;
      }
      const stream = streams.get(at.step)!;
      const events = upToClose(stream, at.index, step.close).map((event) => ({
        ...event,
        messages: event.messages.map((m) => replayed(m, step.variant)),
      }));
      return send(res, n, step, 'sse', events);
    }
    const replays = calls.length === 0 ? [] : step.replays.map((of) => calls[of % calls.length]!);
    const messages = replays.map((call) => resultMessage(call.id, call.step, step.variant));
    const events: StreamEvent[] = step.batched
      ? [{ id: `l${n}-1`, messages: [...messages, listChanged], batch: true }]
      : [...messages, listChanged].map((m, i) => ({ id: `l${n}-${i + 1}`, messages: [m], batch: false }));
    return send(res, n, step, 'sse', events);
  };

  /** Writes the events as the step frames, splits and cuts them; records what was written. */
  async function send(
    res: ServerResponse,
    n: number,
    step: Step,
    format: 'sse' | 'json',
    events: readonly Body[],
  ): Promise<void> {
    const written: WrittenEvent[] = [];
    let text = '';
    for (const event of events) {
      const data = event.batch ? event.messages : event.messages[0];
      text +=
        format === 'json'
          ? JSON.stringify(data)
          : `id: ${event.id}\ndata: ${data === undefined ? '' : JSON.stringify(data)}\n\n`;
      written.push({
        id: format === 'json' ? undefined : event.id,
        messages: event.messages,
        end: Buffer.byteLength(text),
      });
    }
    const body = Buffer.from(text);
    const cut = step.cut !== undefined && step.cut < body.length ? step.cut : undefined;
    const upTo = cut ?? body.length;
    served.set(n, { format, events: written, written: upTo, cut: cut !== undefined });
    res.writeHead(200, {
      'content-type': format === 'json' ? 'application/json' : 'text/event-stream',
      'mcp-session-id': SESSION,
      ...(format === 'sse' ? { 'cache-control': 'no-cache' } : {}),
      ...(step.framing === 'length' ? { 'content-length': String(body.length) } : { 'transfer-encoding': 'chunked' }),
    });
    res.flushHeaders();
    const closed = new Promise<void>((resolve) => res.once('close', resolve));
    const write = (bytes: Buffer) =>
      Promise.race([new Promise<void>((resolve) => res.write(bytes, () => resolve())), closed]);
    const split = step.split !== undefined && step.split < upTo ? step.split : 0;
    if (split > 0) await write(body.subarray(0, split));
    if (upTo > split) await write(body.subarray(split, upTo));
    if (cut !== undefined) res.destroy();
    else res.end();
  }

  const upstream = await startScriptedUpstream(script);
  return {
    url: upstream.url,
    served,
    upTo(id) {
      const at = where.get(id);
      return at && streams.get(at.step)!.events.slice(0, at.index + 1);
    },
    openResponses: () => open,
    answered: (n) => answers.get(n) ?? 'unseen',
    close: () => upstream.close(),
  };
}

/** A call's logical stream: [priming], progress, the result (batched after an earlier call's), progress. */
function callStream(
  n: number,
  step: CallStep,
  id: RequestId,
  foreign: { step: number; id: RequestId; variant: Variant } | undefined,
): LogicalStream {
  const events: StreamEvent[] = [];
  const add = (messages: Message[], batch = false) =>
    events.push({
      id: `s${n}-${step.repeatIds ? Math.floor(events.length / 2) + 1 : events.length + 1}`,
      messages,
      batch,
    });
  if (step.primed) add([]);
  for (let i = 0; i < step.progress[0]; i++) add([progressMessage(n, i)]);
  const resultAt = events.length;
  if (foreign) add([resultMessage(foreign.id, foreign.step, foreign.variant), resultMessage(id, n)], true);
  else add([resultMessage(id, n)]);
  for (let i = 0; i < step.progress[1]; i++) add([progressMessage(n, step.progress[0] + i)]);
  return { events, resultAt };
}

/** The events after index `after`, up to where `close` ends the response. */
function upToClose(stream: LogicalStream, after: number, close: Close): StreamEvent[] {
  const rest = stream.events.slice(after + 1);
  if (close === 'end' || stream.resultAt <= after) return rest;
  return rest.slice(0, stream.resultAt - after - (close === 'before-result' ? 1 : 0));
}
