export * from './core/index.js';
export { ResumewatchSpanProcessor, toSpanRecord, type ResumewatchSpanProcessorOptions } from './doors/processor.js';
export { startServer, type RunningServer, type ServeOptions } from './doors/serve.js';
export { startEmbeddedDetector, type EmbeddedDetector, type EmbeddedDetectorOptions } from './doors/embedded.js';
export { analyzeFiles, formatSummary, AnalyzeInputError, type AnalyzeResult } from './doors/analyze.js';
export {
  groupFindings,
  formatFindingGroups,
  describeCounts,
  findingFacts,
  type FindingGroup,
  type FindingFormatOptions,
} from './doors/findings-format.js';
export { camelCaseOtlpFieldNames } from './doors/otlp-json-names.js';
export { DetectorMetrics } from './metrics.js';
export {
  DEFAULT_CONFIG,
  OPTION_SPECS,
  ConfigError,
  parseDuration,
  parseOptionText,
  type OptionKind,
  resolveConfig,
  type OptionSpec,
  type ResumewatchConfig,
} from './config.js';
export { decodeJsonRequest, decodeProtobufRequest, OtlpDecodeError, type DecodeResult } from './otlp/index.js';
