import type {
  ConflictingTerminal,
  DroppedTerminal,
  FailedResumption,
  GuardOptions,
  RefusedResume,
  ResumeReport,
} from '../../src/index.js';

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
