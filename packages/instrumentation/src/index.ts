export { instrumentFetch, isInstrumentedFetch, DEFAULT_REPLAY_WINDOW_MS, DEFAULT_REQUEST_TIMEOUT_MS } from './instrument-fetch.js';
export { SpanRecorder } from './span-recorder.js';
export { ErrorType } from './span-util.js';
export type { InstrumentFetchOptions, InstrumentedFetch, RecorderStats, McpResumeInstrumentationConfig } from './types.js';
export { McpResumeInstrumentation } from './instrumentation.js';
export { instrumentEventStore } from './event-store.js';
export type { EventStoreLike, EventStoreInstrumentationOptions } from './event-store.js';
export { instrumentServerTransport } from './server-transport.js';
export type { ServerTransportLike, ServerTransportInstrumentationOptions } from './server-transport.js';
