import {
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_EVENTS,
  ResumeOutcome,
} from '@resumewatch/semconv';
import type { SpanRecord } from './types.js';

const OUTCOMES = new Set<string>(Object.values(ResumeOutcome));

export function statusOf(attrs: SpanRecord['attributes']): number {
  const v = attrs[ATTR_HTTP_RESPONSE_STATUS_CODE];
  return typeof v === 'number' ? v : typeof v === 'string' ? Number(v) || 0 : 0;
}

/** The resume's outcome: the attribute when it is a contract value, else derived from status and replayed count. */
export function resumeOutcome(attrs: SpanRecord['attributes'], status: number): ResumeOutcome {
  const v = attrs[ATTR_MCP_RESUME_OUTCOME];
  if (typeof v === 'string' && OUTCOMES.has(v)) return v as ResumeOutcome;
  if (status === 400 || status === 409) return ResumeOutcome.CURSOR_REJECTED;
  if (status === 404) return ResumeOutcome.SESSION_NOT_FOUND;
  if (status >= 200 && status < 300) {
    return attrs[ATTR_MCP_RESUME_REPLAYED_EVENTS] === 0 ? ResumeOutcome.EMPTY_REPLAY : ResumeOutcome.CONTINUATION;
  }
  return ResumeOutcome.ERROR;
}

export function isCursorLoss(outcome: ResumeOutcome, status: number): boolean {
  return (
    outcome === ResumeOutcome.CURSOR_REJECTED ||
    outcome === ResumeOutcome.SESSION_NOT_FOUND ||
    status === 400 ||
    status === 404 ||
    status === 409
  );
}
