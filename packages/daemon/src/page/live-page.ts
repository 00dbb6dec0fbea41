import { ROUTE_PAGE_DATA } from '@resumewatch/semconv';
import type { ResumewatchConfig } from '../config.js';
import type { Pipeline } from '../doors/pipeline.js';
import { pageData, type PageData } from './page-data.js';
import { renderPage } from './render-html.js';

export const PAGE_TITLE = 'resumewatch: findings and their requests';

/** What a running detector's page shows now. */
export function livePageData(pipeline: Pipeline, config: ResumewatchConfig): PageData {
  return pageData({
    source: 'serve',
    now: Date.now(),
    config,
    stats: pipeline.detector.stats(),
    eras: pipeline.metrics.eraCounts(),
    spansPerSecond: pipeline.rate.perSecond(),
    door: pipeline.metrics.addedValues(),
    findings: pipeline.recent.newestFitting(),
    evidence: pipeline.evidence,
  });
}

/**
 * The page at ROUTE_PAGE, with the data of now inline and fresh data from ROUTE_PAGE_DATA; without the
 * data when the request was not authorized (the page then asks for the token and fetches with it).
 */
export function livePage(pipeline: Pipeline, config: ResumewatchConfig, authorized = true): string {
  const data = authorized ? livePageData(pipeline, config) : null;
  return renderPage(data, { title: PAGE_TITLE, dataPath: ROUTE_PAGE_DATA });
}
