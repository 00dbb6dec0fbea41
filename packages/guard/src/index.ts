export { InvalidResumptionError } from './errors.js';
export { ResumeDecision, decideResume, isCursorGoneStatus, isFailedResumption } from './decision.js';
export { DEFAULT_REQUEST_DEADLINE_MS, createGuardListener } from './listener.js';
export type { GuardListener, GuardOptions, GuardStats } from './listener.js';
export { DEFAULT_MAX_POLL_DELAY_MS } from './tasks.js';
export { DEFAULT_REFUSAL_RETENTION_MS } from './session-refusals.js';
export { guardedFetch } from './guarded-fetch.js';
export type { GuardedFetch, GuardedFetchOptions } from './guarded-fetch.js';
export type { IdempotencyKeyCall } from './reissues.js';
export type {
  BrokenAttempt,
  ConflictingTerminal,
  DroppedTerminal,
  DuplicateTask,
  LostTaskResult,
  FailedResumption,
  RefusedResume,
  ReissueAttempt,
  ReissueReport,
  RepeatedRefusal,
  RepeatedTaskHandle,
  ResumeReport,
  TaskCallAttempt,
  TerminalPlace,
} from './reports.js';
