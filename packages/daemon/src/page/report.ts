import { writeFile } from 'node:fs/promises';
import { Detector, type DetectorStats, type Finding, type SpanRecord } from '@resumewatch/detector';
import type { ResumewatchConfig } from '../config.js';
import { analyzeFiles, type AnalyzeResult } from '../doors/analyze.js';
import { FindingLog } from '../doors/finding-log.js';
import { DetectorMetrics } from '../metrics.js';
import { Evidence, drawable } from './evidence.js';
import { pageData } from './page-data.js';
import { PAGE_TITLE } from './live-page.js';
import { renderPage } from './render-html.js';

/**
 * Analyzes recorded traces as `analyze` does and also returns the page of them: one self-contained HTML
 * document (no network, no external asset) with the same views as the live page, to attach to an incident.
 */
export async function analyzeToHtml(
  files: readonly string[],
  config: ResumewatchConfig,
  readStdin?: () => Promise<string>,
): Promise<{ result: AnalyzeResult; html: string }> {
  const evidence = new Evidence(config);
  const metrics = new DetectorMetrics(config.maxServices);
  const result = await analyzeFiles(files, config, readStdin, { evidence, events: metrics });
  const title = `${PAGE_TITLE} (report of ${files.join(', ')})`;
  return { result, html: reportPage(result.findings, result.detectorStats, metrics, evidence, config, title) };
}

/**
 * The report of spans already in memory (the demo's, from its SpanProcessor): the detector run over them
 * in order, then the page of its findings.
 */
export function htmlReportOfSpans(spans: readonly SpanRecord[], config: ResumewatchConfig, title: string): string {
  const evidence = new Evidence(config);
  const metrics = new DetectorMetrics(config.maxServices);
  const findings: Finding[] = [];
  const detector = new Detector({
    ...config,
    events: metrics,
    onFinding: (f) => {
      evidence.reported(f);
      findings.push(f);
    },
  });
  for (const span of spans) {
    if (drawable(detector.ingest(span))) evidence.observe(span);
    detector.advance(span.endTimeUnixMs);
  }
  detector.flush();
  return reportPage(findings, detector.stats(), metrics, evidence, config, title);
}

function reportPage(
  findings: readonly Finding[],
  stats: DetectorStats,
  metrics: DetectorMetrics,
  evidence: Evidence,
  config: ResumewatchConfig,
  title: string,
): string {
  // Bounded as /findings is: the newest findings that fit in --findings-bytes.
  const log = new FindingLog(config.findingsBuffer, config.findingsMaxBytes);
  for (const f of findings) log.push(f, JSON.stringify(f));
  const data = pageData({
    source: 'report',
    now: Date.now(),
    config,
    stats,
    eras: metrics.eraCounts(),
    spansPerSecond: undefined,
    door: {},
    findings: log.newestFitting(),
    evidence,
    // A file fetches nothing: every timeline is in it.
    timelines: true,
  });
  return renderPage(data, { title });
}

/** `analyze --html FILE`: the report written to `out`. */
export async function writeHtmlReport(
  out: string,
  files: readonly string[],
  config: ResumewatchConfig,
): Promise<AnalyzeResult> {
  const { result, html } = await analyzeToHtml(files, config);
  await writeFile(out, html);
  return result;
}
