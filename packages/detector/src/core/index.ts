export { Detector } from './detector.js';
export { DEFAULT_DETECTOR_OPTIONS, type DetectorInit, type DetectorOptions } from './options.js';
export type {
  AttributeValue,
  DetectorEvents,
  DetectorStats,
  Finding,
  SpanKindCode,
  SpanRecord,
  SpanSink,
} from './types.js';
export { SPAN_KIND_CLIENT, SPAN_KIND_SERVER } from './types.js';
export type { Operation } from './operations.js';
export type { TaskTimeline } from './tasks.js';
export {
  StateMismatchError,
  type DetectorCounts,
  type DetectorState,
  type IdGenerations,
  type ReissueRows,
  type PendingRows,
  type TaskRows,
  type RequestRows,
} from './state-codec.js';
export { OTHER_SERVICE } from './services.js';
export { listeningClientOf } from './loops.js';
