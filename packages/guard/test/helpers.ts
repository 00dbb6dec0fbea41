import type { ConflictingTerminal, DroppedTerminal, FailedResumption, GuardOptions, RefusedResume, ResumeReport } from '../src/index.js';

export interface GuardRecord {
  refused: RefusedResume[];
  dropped: DroppedTerminal[];
  conflicts: ConflictingTerminal[];
  decisions: ResumeReport[];
  failed: FailedResumption[];
  options: GuardOptions;
}

/** Guard options whose callbacks record what the guard did. */
export function recordGuard(extra: GuardOptions = {}): GuardRecord {
  const record: GuardRecord = { refused: [], dropped: [], conflicts: [], decisions: [], failed: [], options: {} };
  record.options = {
    ...extra,
    onResumeRefused: (r) => void record.refused.push(r),
    onDuplicateTerminalDropped: (r) => void record.dropped.push(r),
    onConflictingTerminal: (r) => void record.conflicts.push(r),
    onResumeDecision: (r) => void record.decisions.push(r),
    onFailedResumption: (r) => void record.failed.push(r),
  };
  return record;
}

/** Waits for a condition, polling; fails after `timeoutMs` (generous: tests run on loaded machines). */
export async function until(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const jsonHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

export function post(body: object, sessionId?: string): RequestInit {
  return {
    method: 'POST',
    headers: { ...jsonHeaders, ...(sessionId ? { 'mcp-session-id': sessionId } : {}) },
    body: JSON.stringify(body),
  };
}

export function resumeInit(sessionId: string, lastEventId: string): RequestInit {
  return { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sessionId, 'last-event-id': lastEventId } };
}
