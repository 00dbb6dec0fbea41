import { vi } from 'vitest';
import { startGateway } from '../../src/index.js';
import { judge, report } from './proof-model.js';
import type { Judgement, TraceEntry, Violation } from './proof-model.js';
import { describeSchedule } from './proof-schedule.js';
import type { Step } from './proof-schedule.js';
import { SESSION, STEP_HEADER, startProofUpstream } from './proof-upstream.js';
import { SocketConnection } from './socket-client.js';
import type { ReadResponse } from './socket-client.js';
import { completeEvents } from './sse-events.js';

export interface RunReport {
  violations: Violation[];
  /** The gateway's actions that had proof (405s, removed results): what the schedule exercised. */
  acted: Judgement['acted'];
  /** The broken invariants, the schedule and the trace, for a failure's message. */
  text: string;
  /** The ids of the complete SSE events the client read of each step's response. */
  eventsRead(step: number): string[];
}

const SETTLE_MS = 5_000;

/**
 * Plays a schedule: a fresh scripted upstream and a real gateway in front of it (`enforce: true`, no
 * detector), on 127.0.0.1, and a client on bare sockets. Steps run one after another, a step marked
 * `pipeline` in the same write as the one before it; after each, the client waits until neither the
 * gateway nor the upstream has an exchange open, so that every schedule plays the same way. The trace
 * then goes to the model (proof-model.ts).
 */
export async function runSchedule(
  steps: readonly Step[],
  { enforce = true }: { enforce?: boolean } = {},
): Promise<RunReport> {
  const upstream = await startProofUpstream(steps);
  // Both proofs of receipt, the connection's included: the model (proof-model.ts) admits both.
  const gateway = await startGateway({
    upstream: upstream.url,
    host: '127.0.0.1',
    port: 0,
    enforce,
    connectionProof: true,
    detector: false,
  });
  /**
   * Pipelined requests whose connection died before their turn: Node's server never emits 'close' for a
   * response still queued behind another when the socket goes, so the gateway may count them open for good.
   */
  let orphans = 0;
  const idle = () => gateway.counts().open <= orphans && upstream.openResponses() === 0;
  const connections: SocketConnection[] = [];
  const trace: TraceEntry[] = [];
  /** The call steps sent so far, in order (a resume's `of` picks among those with a cursor). */
  const calls: number[] = [];
  /** The client's cursor per call stream: the last id of an event it received whole. */
  const cursors = new Map<number, string>();
  /** The call whose stream each resume step continues. */
  const resumes = new Map<number, number>();

  const request = (n: number): string | { skip: string } => {
    const step = steps[n]!;
    const headers = [
      `Host: 127.0.0.1:${gateway.port}`,
      `Mcp-Session-Id: ${SESSION}`,
      'Mcp-Protocol-Version: 2025-11-25',
      `${STEP_HEADER}: ${n}`,
    ];
    if (step.kind === 'call') {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: step.id,
        method: 'tools/call',
        params: { name: 'work', arguments: {} },
      });
      calls.push(n);
      const head = [
        'POST /mcp HTTP/1.1',
        ...headers,
        'Content-Type: application/json',
        'Accept: application/json, text/event-stream',
      ];
      return `${[...head, `Content-Length: ${Buffer.byteLength(body)}`].join('\r\n')}\r\n\r\n${body}`;
    }
    let cursor = '';
    if (step.kind === 'resume') {
      const resumable = calls.filter((call) => cursors.has(call));
      if (resumable.length === 0) return { skip: 'the client holds no cursor' };
      const call = resumable[step.of % resumable.length]!;
      const held = cursors.get(call)!;
      resumes.set(n, call);
      cursor = `Last-Event-ID: ${held}\r\n`;
    }
    return `${['GET /mcp HTTP/1.1', ...headers, 'Accept: text/event-stream'].join('\r\n')}\r\n${cursor}\r\n`;
  };

  /** The client keeps the last id of the complete events of a call stream's response. */
  const keepCursor = (n: number, response: ReadResponse): void => {
    const call = steps[n]!.kind === 'call' ? n : resumes.get(n);
    const type = response.head?.headers.find(([name]) => name.toLowerCase() === 'content-type')?.[1] ?? '';
    if (call === undefined || response.head?.status !== 200 || !type.includes('text/event-stream')) return;
    for (const event of completeEvents(response.body.toString('utf8')))
      if (event.id !== undefined) cursors.set(call, event.id);
  };

  const settled = async (): Promise<boolean> => {
    try {
      await vi.waitFor(
        () => {
          if (!idle()) throw new Error('an exchange is open');
        },
        { timeout: SETTLE_MS, interval: 10 },
      );
      return true;
    } catch {
      return false;
    }
  };

  try {
    for (let n = 0; n < steps.length;) {
      const group = [n++];
      while (n < steps.length && steps[n]!.conn === 'pipeline') group.push(n++);
      const texts: string[] = [];
      const sent: number[] = [];
      const head = steps[group[0]!]!;
      let conn = head.conn === 'reuse' ? connections.findLast((c) => c.reusable) : undefined;
      for (const s of group) {
        const text = request(s);
        if (typeof text !== 'string') {
          trace.push({ kind: 'skipped', step: s, why: text.skip });
          continue;
        }
        if (conn === undefined)
          connections.push((conn = await SocketConnection.open(connections.length + 1, gateway.port)));
        const resumed = resumes.get(s);
        trace.push({
          kind: 'sent',
          step: s,
          conn: conn.id,
          pipelined: sent.length > 0,
          ...(resumed !== undefined ? { cursor: cursors.get(resumed)!, resumes: resumed } : {}),
        });
        sent.push(s);
        texts.push(text);
      }
      if (conn === undefined || sent.length === 0) continue;
      conn.send(texts);
      for (let i = 0; i < sent.length; i++) {
        const s = sent[i]!;
        const read = steps[s]!.read;
        // All sent: the upstream's response closed, or (a head that came without the upstream) the gateway's own answer.
        const sentAll = (gotHead: boolean) =>
          upstream.answered(s) === 'closed' || (gotHead && upstream.answered(s) === 'unseen');
        const response = await conn.read(read === 'all' ? Infinity : read.bytes, sentAll);
        trace.push({ kind: 'read', step: s, conn: conn.id, response });
        keepCursor(s, response);
        if (response.end === 'complete') continue;
        // The client stopped reading (or the response broke): it destroys the socket, at once or once
        // the gateway is done writing (everything it wrote then sits unread in the client's buffer).
        // The responses pipelined behind this one go unread.
        const unread = sent.slice(i + 1);
        orphans += unread.length;
        if (response.end === 'stopped' && read !== 'all' && read.close === 'later') await settled();
        conn.destroy();
        for (const rest of unread) trace.push({ kind: 'unread', step: rest, conn: conn.id });
        break;
      }
      if (!(await settled()))
        trace.push({
          kind: 'hang',
          step: group.at(-1)!,
          problem: `an exchange still open at the gateway or the upstream after ${SETTLE_MS} ms`,
        });
    }
    for (const c of connections)
      for (const problem of c.problems) trace.push({ kind: 'connection', conn: c.id, problem });
  } finally {
    for (const c of connections) c.destroy();
    await gateway.close();
    await upstream.close();
  }
  const { violations, lines, acted } = judge(steps, trace, upstream);
  return {
    violations,
    acted,
    text: report(violations, describeSchedule(steps), lines),
    eventsRead: (step) =>
      trace
        .filter((entry) => entry.kind === 'read' && entry.step === step)
        .flatMap((entry) => completeEvents((entry as { response: ReadResponse }).response.body.toString('utf8')))
        .map((event) => event.id ?? ''),
  };
}
