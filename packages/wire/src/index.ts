export { SseParser, readSse } from './sse.js';
export type { SseEvent, SseEventHandler } from './sse.js';
export { WireObserver } from './observer.js';
// The observer's state across a restart (the gateway's --state-file).
export {
  OBSERVER_STATE_VERSION,
  SNAPSHOT_STEP_BYTES,
  restoreObserver,
  snapshotObserverSteps,
  snapshotObserverText,
} from './observer-state.js';
export type { ObserverRestore, ObserverState, SnapshotOptions } from './observer-state.js';
export type { ChunkSink, PushedBody } from './body-taps.js';
export type { FetchLike } from './observer.js';
export { digestOfTerminal } from './digest.js';
export { HEADER_LAST_EVENT_ID, HEADER_PROTOCOL_VERSION, HEADER_SESSION_ID, headerValue } from './headers.js';
// Re-issue detection of the 2026-07-28 era, shared by the guard and the instrumentation.
export {
  BrokenRequests,
  DEFAULT_REISSUE_WINDOW_MS,
  canonicalJson,
  isInputRound,
  keyedArgumentsDigest,
  requestArgumentsDigest,
  requestIdempotencyKey,
  requestWorkDigest,
  TOOLS_CALL_METHOD,
} from './reissue.js';
export type { BrokenRequestsOptions } from './reissue.js';
// The JSON-RPC helpers the instrumentation reads message bodies with; the rest of jsonrpc.ts is internal.
export {
  isJsonRpcMessage,
  isRequest,
  isResponse,
  messagesOfBody,
  parseJsonBody,
  parseMessages,
  requestTarget,
} from './jsonrpc.js';
export type { JsonRpcMessage, JsonRpcRequest, JsonRpcResponse } from './jsonrpc.js';
export type * from './types.js';
// What a message shows of an MCP task (both shapes), for the instrumentation's and the gateway's spans.
export {
  isTaskIdMethod,
  isTaskNotification,
  requestTaskId,
  taskFactsOfAnswer,
  taskFactsOfNotification,
  taskRequested,
} from './task-facts.js';
export type { TaskFacts } from './task-facts.js';
