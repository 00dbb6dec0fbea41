import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_REATTACH_ACCEPTED,
  ATTR_MCP_REATTACH_TRIGGER,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_LAST_EVENT_ID,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_PREVIOUS_ID,
  ATTR_MCP_STREAM_RESUMED_FROM_ID,
  ATTR_MCP_EVENT_ID,
  ATTR_MCP_TERMINAL_DELIVERY,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_OUTCOME,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_STREAM_KIND,
  ATTR_MCP_TERMINAL_CONFLICT,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
  ATTR_MCP_TERMINAL_FOREIGN,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION,
  ATTR_MCP_REQUEST_INPUT_ROUND,
  ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID,
  ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID,
  ATTR_MCP_REQUEST_RECOVERY,
  ATTR_ERROR_TYPE,
  ATTR_SERVER_ADDRESS,
  FindingRecord,
  GuardAction,
  RequestRecovery,
  ResumeEvidence,
  StreamKind,
  ReattachTrigger,
  ResumeOutcome,
  FindingKind,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_STREAM_RESUME,
  TerminalDelivery,
  TerminalOutcome,
} from '@resumewatch/semconv';
import type { AttributeValue, Finding, SpanRecord } from '../../src/index.js';

let counter = 0;
function spanId(): string {
  counter++;
  return counter.toString(16).padStart(16, '0');
}
const TRACE = 'abcdef0123456789abcdef0123456789';
export const T0 = 1_700_000_000_000;

export function span(
  name: string,
  t: number,
  attributes: Record<string, AttributeValue>,
  opts: { service?: string; kind?: SpanRecord['kind']; trace?: string } = {},
): SpanRecord {
  return {
    traceId: opts.trace ?? TRACE,
    spanId: spanId(),
    name,
    kind: opts.kind ?? 3,
    startTimeUnixMs: t,
    endTimeUnixMs: t + 5,
    attributes,
    service: opts.service ?? 'client',
  };
}

export interface Req {
  session: string;
  request: string | number;
  service?: string;
}

export interface TerminalOpts {
  foreign?: boolean;
  conflict?: boolean;
  server?: string;
  firstStream?: string;
  guard?: GuardAction;
}

export function terminal(r: Req, t: number, stream: string, duplicate = false, o: TerminalOpts = {}): SpanRecord {
  const extra: Record<string, AttributeValue> = {};
  if (o.foreign !== undefined) extra[ATTR_MCP_TERMINAL_FOREIGN] = o.foreign;
  if (o.conflict !== undefined) extra[ATTR_MCP_TERMINAL_CONFLICT] = o.conflict;
  if (o.server !== undefined) extra[ATTR_SERVER_ADDRESS] = o.server;
  if (o.firstStream !== undefined) extra[ATTR_MCP_TERMINAL_FIRST_STREAM_ID] = o.firstStream;
  if (o.guard !== undefined) extra[ATTR_MCP_GUARD_ACTION] = o.guard;
  return span(
    SPAN_REQUEST_TERMINAL,
    t,
    {
      ...extra,
      [ATTR_MCP_SESSION_ID]: r.session,
      [ATTR_JSONRPC_REQUEST_ID]: r.request,
      [ATTR_MCP_METHOD_NAME]: 'tools/call',
      [ATTR_MCP_STREAM_ID]: stream,
      [ATTR_MCP_EVENT_ID]: `${stream}-ev`,
      [ATTR_MCP_TERMINAL_OUTCOME]: TerminalOutcome.RESULT,
      [ATTR_MCP_TERMINAL_DUPLICATE]: duplicate,
      [ATTR_MCP_TERMINAL_DELIVERY]: duplicate ? TerminalDelivery.REPLAY : TerminalDelivery.LIVE,
    },
    { kind: 1, service: r.service },
  );
}

export function reattach(r: Req, t: number, stream: string, previous: string, status = 200): SpanRecord {
  return span(
    SPAN_SESSION_REATTACH,
    t,
    {
      [ATTR_MCP_SESSION_ID]: r.session,
      [ATTR_JSONRPC_REQUEST_ID]: r.request,
      [ATTR_MCP_REATTACH_TRIGGER]: ReattachTrigger.STREAM_CLOSED,
      [ATTR_MCP_STREAM_PREVIOUS_ID]: previous,
      [ATTR_MCP_STREAM_ID]: stream,
      [ATTR_HTTP_REQUEST_METHOD]: 'GET',
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: status,
      [ATTR_MCP_REATTACH_ACCEPTED]: status >= 200 && status < 300,
    },
    { service: r.service },
  );
}

export interface ResumeOpts {
  observed?: boolean;
  outcome?: ResumeOutcome;
  status?: number;
  replayed?: number;
  replayedTerminal?: boolean;
  kind?: SpanRecord['kind'];
  evidence?: ResumeEvidence;
  streamKind?: StreamKind;
  /** Leave jsonrpc.request.id out (a listening-stream resume has none). */
  noRequest?: boolean;
}

export function resume(r: Req, t: number, stream: string, from: string, o: ResumeOpts = {}): SpanRecord {
  const attrs: Record<string, AttributeValue> = {
    [ATTR_MCP_SESSION_ID]: r.session,
    [ATTR_JSONRPC_REQUEST_ID]: r.request,
    [ATTR_MCP_STREAM_ID]: stream,
    [ATTR_MCP_STREAM_RESUMED_FROM_ID]: from,
    [ATTR_MCP_RESUME_LAST_EVENT_ID]: `${from}-ev`,
    [ATTR_HTTP_RESPONSE_STATUS_CODE]: o.status ?? 200,
    [ATTR_MCP_RESUME_REPLAYED_EVENTS]: o.replayed ?? 1,
    [ATTR_MCP_RESUME_REPLAYED_TERMINAL]: o.replayedTerminal ?? false,
  };
  if (o.observed !== undefined) attrs[ATTR_MCP_REQUEST_TERMINAL_OBSERVED] = o.observed;
  if (o.outcome !== undefined) attrs[ATTR_MCP_RESUME_OUTCOME] = o.outcome;
  if (o.evidence !== undefined) attrs[ATTR_MCP_RESUME_EVIDENCE] = o.evidence;
  if (o.streamKind !== undefined) attrs[ATTR_MCP_STREAM_KIND] = o.streamKind;
  if (o.noRequest) delete attrs[ATTR_JSONRPC_REQUEST_ID];
  return span(SPAN_STREAM_RESUME, t, attrs, { service: r.service, kind: o.kind ?? 3 });
}

/** What a session-era client request span that ended without its result says (see requestEnded). */
export interface EndOpts {
  /** What the client did about its stream ending without the result (mcp.request.recovery). */
  recovery?: RequestRecovery;
  /** Its last resume's outcome (mcp.resume.outcome on the request span). */
  outcome?: ResumeOutcome;
  kind?: SpanRecord['kind'];
  /** Its start; default `end - 1000`. */
  start?: number;
}

/** A session-era tools/call request span ended at `end` with `error` (undefined: with its result). */
export function requestEnded(r: Req, end: number, error: string | undefined, o: EndOpts = {}): SpanRecord {
  const attrs: Record<string, AttributeValue> = {
    [ATTR_MCP_METHOD_NAME]: 'tools/call',
    [ATTR_MCP_SESSION_ID]: r.session,
    [ATTR_JSONRPC_REQUEST_ID]: r.request,
  };
  if (error !== undefined) attrs[ATTR_ERROR_TYPE] = error;
  if (o.recovery !== undefined) attrs[ATTR_MCP_REQUEST_RECOVERY] = o.recovery;
  if (o.outcome !== undefined) attrs[ATTR_MCP_RESUME_OUTCOME] = o.outcome;
  const out = span('tools/call stream_progress', o.start ?? end - 1000, attrs, {
    service: r.service,
    kind: o.kind ?? 3,
  });
  return { ...out, endTimeUnixMs: end };
}

/** A 2026-07-28 era request span: no session, its own trace. */
export interface ModernOpts {
  trace: string;
  request?: string | number;
  service?: string;
  /** OTLP kind: 3 client (the default), 2 server. */
  kind?: SpanRecord['kind'];
  /** The request span (trace and span) this one re-issues. */
  reissueOf?: SpanRecord;
  inputRound?: boolean;
  error?: string;
  /** mcp.request.completed_after_cancellation, on a server's or the gateway's span. */
  completedAfterCancellation?: boolean;
}

/** A tools/call request span of the 2026-07-28 era from `t` to `t + 100`. */
export function modernRequest(t: number, o: ModernOpts): SpanRecord {
  const attrs: Record<string, AttributeValue> = {
    [ATTR_MCP_METHOD_NAME]: 'tools/call',
    [ATTR_JSONRPC_REQUEST_ID]: o.request ?? 1,
  };
  if (o.reissueOf !== undefined) {
    attrs[ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID] = o.reissueOf.traceId;
    attrs[ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID] = o.reissueOf.spanId;
  }
  if (o.inputRound !== undefined) attrs[ATTR_MCP_REQUEST_INPUT_ROUND] = o.inputRound;
  if (o.error !== undefined) attrs[ATTR_ERROR_TYPE] = o.error;
  if (o.completedAfterCancellation !== undefined)
    attrs[ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION] = o.completedAfterCancellation;
  const out = span('tools/call side_effect', t, attrs, {
    trace: o.trace,
    kind: o.kind ?? 3,
    service: o.service ?? 'client',
  });
  return { ...out, endTimeUnixMs: t + 100 };
}

/** A trace id of its own for each number. */
export function traceOf(n: number): string {
  return n.toString(16).padStart(32, 'e');
}

/**
 * The seed failure as a client records it: the live terminal on stream A, then `loops` reattach+resume
 * pairs that each replay the terminal on a new stream, then an empty replay once the cursor is evicted.
 */
export function seedScenario(r: Req, loops = 4, start = T0): SpanRecord[] {
  const out: SpanRecord[] = [terminal(r, start, 'A')];
  let prev = 'A';
  for (let i = 1; i <= loops; i++) {
    const t = start + i * 1000;
    const s = `B${i}`;
    out.push(reattach(r, t, s, prev));
    out.push(
      resume(r, t + 1, s, prev, {
        observed: true,
        outcome: ResumeOutcome.CONTINUATION,
        replayed: 1,
        replayedTerminal: true,
      }),
    );
    out.push(terminal(r, t + 10, s, true));
    prev = s;
  }
  const t = start + (loops + 1) * 1000;
  out.push(reattach(r, t, 'END', prev));
  out.push(resume(r, t + 1, 'END', prev, { observed: true, outcome: ResumeOutcome.EMPTY_REPLAY, replayed: 0 }));
  return out;
}

export function shuffle<T>(items: T[], seed: number): T[] {
  const a = items.slice();
  let x = seed >>> 0 || 1;
  for (let i = a.length - 1; i > 0; i--) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const j = (x >>> 0) % (i + 1);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/**
 * The parts of a finding that do not depend on which piece of evidence arrived last. A signature is
 * reported as soon as it is complete, so its counts are those known then: only the storm_ended record's
 * are final.
 */
export function essence(f: Finding): string {
  const early = f.kind === FindingKind.SIGNATURE;
  return JSON.stringify([
    f.kind,
    f.record,
    f.service,
    f.session_id,
    f.request_id,
    f.trace_id,
    early ? undefined : f.duplicates,
    early ? undefined : f.attempts,
    f.ended_by,
    f.outcome,
    f.status_code,
    f.server,
  ]);
}

/**
 * The findings that stand: every retraction removes itself and the finding it retracts (with the
 * outcome_corrected record that a retracted lost_result had made).
 */
export function net(fs: Finding[]): Finding[] {
  const key = (f: Finding) => JSON.stringify([f.kind, f.service, f.session_id, f.request_id]);
  const retracted = new Set(fs.filter((f) => f.record === FindingRecord.RETRACTION).map(key));
  return fs.filter(
    (f) =>
      f.record !== FindingRecord.RETRACTION &&
      !((f.record === undefined || f.record === FindingRecord.OUTCOME_CORRECTED) && retracted.has(key(f))),
  );
}
