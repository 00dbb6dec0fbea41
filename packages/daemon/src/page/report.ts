import { writeFile } from 'node:fs/promises';
import type { ResumewatchConfig } from '../config.js';
import { analyzeFiles, type AnalyzeResult } from '../doors/analyze.js';
import { FindingLog } from '../doors/finding-log.js';
import { DetectorMetrics } from '../metrics.js';
import { Evidence } from './evidence.js';
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
  // Bounded as /findings is: the newest findings that fit in --findings-bytes.
  const log = new FindingLog(config.findingsBuffer, config.findingsMaxBytes);
  for (const f of result.findings) log.push(f, JSON.stringify(f));
  const data = pageData({
    source: 'report',
    now: Date.now(),
    config,
    stats: result.detectorStats,
    eras: metrics.eraCounts(),
    spansPerSecond: undefined,
    findings: log.newestFitting(),
    evidence,
  });
  return { result, html: renderPage(data, { title: `${PAGE_TITLE} (report of ${files.join(', ')})` }) };
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
