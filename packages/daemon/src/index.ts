export { startServer, type RunningServer, type ServeOptions } from './doors/serve.js';
export { startEmbeddedDetector, type EmbeddedDetector, type EmbeddedDetectorOptions } from './doors/embedded.js';
export { analyzeFiles, formatSummary, AnalyzeInputError, type AnalyzeResult } from './doors/analyze.js';
export { DetectorMetrics } from './metrics.js';
export { endAfterRefusedBody } from './doors/refused-body.js';
export { unexpectedErrorLine } from './cli-error.js';
export { hostCheck, type HostCheck, type HostRefusal } from './host-policy.js';
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
export { analyzeToHtml, htmlReportOfSpans, writeHtmlReport } from './page/report.js';
export { renderPage, scriptJson, type PageOptions } from './page/render-html.js';
export type { PageData, PageHeader } from './page/page-data.js';
