export { InvalidResumptionError } from './errors.js';
export { ResumeDecision, decideResume, isCursorGoneStatus, isFailedResumption } from './decision.js';
export { DEFAULT_REQUEST_DEADLINE_MS, createGuardListener } from './listener.js';
export type { GuardListener, GuardOptions } from './listener.js';
export { guardedFetch } from './guarded-fetch.js';
export type { GuardedFetch, GuardedFetchOptions } from './guarded-fetch.js';
export type { IdempotencyKeyCall } from './reissues.js';
export type {
  BrokenAttempt,
  ConflictingTerminal,
  DroppedTerminal,
  FailedResumption,
  RefusedResume,
  ReissueAttempt,
  ReissueReport,
  ResumeReport,
  TerminalPlace,
} from './reports.js';
