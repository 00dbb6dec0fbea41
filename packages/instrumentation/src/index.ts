export { instrumentFetch, isInstrumentedFetch, DEFAULT_REPLAY_WINDOW_MS, DEFAULT_REQUEST_TIMEOUT_MS } from './instrument-fetch.js';
export { SpanRecorder } from './span-recorder.js';
export { ErrorType } from './span-util.js';
export type { InstrumentFetchOptions, InstrumentedFetch, RecorderStats, McpResumeInstrumentationConfig } from './types.js';
export { McpResumeInstrumentation } from './instrumentation.js';
