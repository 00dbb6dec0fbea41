export { instrumentFetch, DEFAULT_REQUEST_TIMEOUT_MS } from './instrument-fetch.js';
export { releaseHeldPolls } from './held-polls.js';
/** error.type values the instrumentation sets besides HTTP status codes, JSON-RPC error codes and exception names. */
export { ErrorType } from './semconv.js';
export { McpResumeInstrumentation } from './instrumentation.js';
export { instrumentEventStore } from './event-store.js';
export { instrumentServerTransport, DEFAULT_CANCELLATION_WAIT_MS } from './server-transport.js';
export { instrumentMcpServer } from './mcp-server.js';
export { idOptionsFromEnv, IdPolicyError, ENV_ID_POLICY, ENV_ID_KEY } from './id-policy.js';
export type { GuardOptions } from '@resumewatch/guard';
export type { OpenRequestSpan } from './span-recorder.js';
export type { RecordTracer } from './record-tracer.js';
export type {
  InstrumentFetchOptions,
  InstrumentedFetch,
  RecorderStats,
  McpResumeInstrumentationConfig,
  GlobalFetchOptions,
  GlobalFetchStats,
  IdPolicy,
  IdPolicyOptions,
  EventStoreLike,
  EventStoreInstrumentationOptions,
  ServerTransportLike,
  ServerTransportInstrumentationOptions,
} from './types.js';
