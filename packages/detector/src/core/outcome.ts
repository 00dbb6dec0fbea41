import {
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_MCP_GUARD_ACTION,
  GuardAction,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ResumeEvidence,
  ResumeOutcome,
  resumeVerdict,
} from '@resumewatch/semconv';
import { M_ALL, M_GUARD, M_STATUS } from './marks.js';
import { SPAN_KIND_SERVER, type SpanKindCode, type SpanRecord } from './types.js';

const OUTCOMES = new Set<string>(Object.values(ResumeOutcome));
/** OTLP span kind SERVER. */

/** The HTTP status, 0 when none; `marks` (marks.ts): the record's, when the caller has them. */
export function statusOf(attrs: SpanRecord['attributes'], marks = M_ALL): number {
  if ((marks & M_STATUS) === 0) return 0;
  const v = attrs[ATTR_HTTP_RESPONSE_STATUS_CODE];
  return typeof v === 'number' ? v : typeof v === 'string' ? Number(v) || 0 : 0;
}

/**
 * The resume's outcome: the attribute when it is a contract value, else `resumeVerdict` (the one rule
 * of `@resumewatch/semconv`) over what the span shows: its status, its replayed messages and its
 * evidence attribute (ATTR_MCP_RESUME_EVIDENCE). A span that shows nothing the rule can decide on (2xx,
 * no message, no evidence) counts as `error`, the contract's catch-all, and is never a finding.
 */
export function resumeOutcome(attrs: SpanRecord['attributes'], status: number): ResumeOutcome {
  const v = attrs[ATTR_MCP_RESUME_OUTCOME];
  if (typeof v === 'string' && OUTCOMES.has(v)) return v as ResumeOutcome;
  const replayed = attrs[ATTR_MCP_RESUME_REPLAYED_EVENTS];
  const evidence = attrs[ATTR_MCP_RESUME_EVIDENCE];
  const verdict = resumeVerdict({
    status,
    messages: typeof replayed === 'number' ? replayed : evidence === ResumeEvidence.MESSAGE ? 1 : 0,
    ended: evidence === ResumeEvidence.BODY_END ? 'clean' : undefined,
    pollingAnnounced: false,
    deadlinePassed: evidence === ResumeEvidence.DEADLINE,
    requestEnded: evidence === ResumeEvidence.REQUEST_END,
  });
  return verdict?.outcome ?? ResumeOutcome.ERROR;
}

/**
 * An empty replay is a failed resumption only on evidence: the end of the resumed body or the request's
 * deadline (ATTR_MCP_RESUME_EVIDENCE). Without the attribute, a client span's `empty_replay` is trusted
 * (its emitter decided on evidence it did not name); a server span's is not: the server replayed nothing
 * and kept the stream open for live events, which is what a quiet, healthy server does too.
 */
export function isEvidencedEmptyReplay(attrs: SpanRecord['attributes'], kind: SpanKindCode): boolean {
  const evidence = attrs[ATTR_MCP_RESUME_EVIDENCE];
  if (evidence === undefined) return kind !== SPAN_KIND_SERVER;
  return evidence === ResumeEvidence.BODY_END || evidence === ResumeEvidence.DEADLINE;
}

// What the guard stopped in the client (a resume it refused, a duplicate terminal it dropped before the
// application saw it) shows in the metrics, not in findings, so a protected client pages no one.

/** The guard dropped this terminal: a duplicate of one the application already had. */
export function droppedByGuard(attrs: SpanRecord['attributes'], marks = M_ALL): boolean {
  return (marks & M_GUARD) !== 0 && attrs[ATTR_MCP_GUARD_ACTION] === GuardAction.DUPLICATE_TERMINAL_DROPPED;
}

/** The guard refused this resume in the client: it never left the process, so it is no attempt. */
export function refusedByGuard(attrs: SpanRecord['attributes'], marks = M_ALL): boolean {
  return (marks & M_GUARD) !== 0 && attrs[ATTR_MCP_GUARD_ACTION] === GuardAction.RESUME_REFUSED;
}
