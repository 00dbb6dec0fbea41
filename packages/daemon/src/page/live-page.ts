import type { Finding } from '@resumewatch/detector';
import { METRIC_PAGE_RENDERS_TOTAL, ROUTE_PAGE_DATA, ROUTE_PAGE_TIMELINE } from '@resumewatch/semconv';
import type { ResumewatchConfig } from '../config.js';
import { doorCounter } from '../doors/door-counters.js';
import type { Pipeline } from '../doors/pipeline.js';
import { findingTimeline, pageData, type PageData } from './page-data.js';
import { renderPageOfJson, type PageOptions } from './render-html.js';
import type { DrawnTimeline } from './timeline-view.js';

export const PAGE_TITLE = 'resumewatch: findings and their requests';

/** How long one render of the live page and its data is reused at least: at most one render a second. */
const PAGE_REUSE_MS = 1000;
/** And at most, however long renders take: the page is never older than this. */
export const PAGE_REUSE_MAX_MS = 10_000;
/** A render is reused for this many times what it took: renders take at most a tenth of the event loop. */
const REUSE_PER_RENDER_MS = 10;

const OPTIONS: PageOptions = {
  title: PAGE_TITLE,
  dataPath: ROUTE_PAGE_DATA,
  timelinePath: ROUTE_PAGE_TIMELINE,
  policy: 'header',
};

/** What a running detector's page shows now: no timeline drawn (the page fetches each when it is opened). */
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
    timelines: false,
  });
}

/** One render: the data's JSON, made once; the bodies of the two routes, each encoded once when first asked. */
interface Render {
  at: number;
  /** What making it took so far (ms of this process, the page's own part included once made). */
  took: number;
  json: string;
  data?: Buffer;
  page?: Buffer;
  /**
   * The first finding listed of each request key, for its timeline: references to the findings the
   * render lists (--findings-bytes bounds them), made anew with each render, so no cap of its own.
   */
  findings: Map<string, Finding>;
}

/** What ROUTE_PAGE_TIMELINE answers: the request's timeline, null when no evidence of it is held. */
export interface TimelineAnswer {
  key: string;
  timeline: DrawnTimeline | null;
}

/**
 * The page at ROUTE_PAGE (the data of now inline), its data at ROUTE_PAGE_DATA and one finding's
 * request timeline at ROUTE_PAGE_TIMELINE, for the metrics listener. Everything here is synchronous and
 * runs in the door's own event loop, which in the gateway also forwards MCP traffic, so no answer does
 * work that grows with the evidence: a render lists the findings (bounded by --findings-bytes) and
 * draws no timeline; a timeline answer draws one request's (at most EVIDENCE_EVENTS events, a
 * re-issue's two attempts twice that), when the page opens that finding. One render serves every
 * request, whatever asks and however often (the page itself asks every two seconds), for PAGE_REUSE_MS,
 * or for ten times what it took when that is longer (up to PAGE_REUSE_MAX_MS). Requests that arrive
 * during a render wait for it and take it. What one render holds is bounded by the newest findings that
 * fit in --findings-bytes. Renders are counted in METRIC_PAGE_RENDERS_TOTAL.
 */
export class LivePage {
  private last: Render | undefined;
  /** The page without data, for a request without the token (it fetches its data with one): always the same. */
  private readonly lockedPage = Buffer.from(renderPageOfJson('null', OPTIONS));
  private readonly rendered: () => void;

  constructor(
    private readonly pipeline: Pipeline,
    private readonly config: ResumewatchConfig,
  ) {
    this.rendered = doorCounter(pipeline.metrics, METRIC_PAGE_RENDERS_TOTAL);
  }

  /** The page with the data of the last render (at most PAGE_REUSE_MAX_MS old). */
  page(): Buffer {
    const r = this.render();
    if (r.page) return r.page;
    const start = performance.now();
    r.page = Buffer.from(renderPageOfJson(r.json, OPTIONS));
    r.took += performance.now() - start;
    return r.page;
  }

  /** The data of the last render, as JSON. */
  data(): Buffer {
    const r = this.render();
    return (r.data ??= Buffer.from(r.json));
  }

  /** The page without its data. */
  locked(): Buffer {
    return this.lockedPage;
  }

  /**
   * The timeline of the request `key` of the last render's findings (as ROUTE_PAGE_DATA lists them),
   * drawn now from the evidence: one request's, whatever the evidence holds. Undefined when no finding
   * of the render has that key (the page's data is older than the render, or the key is made up).
   */
  timeline(key: string): Buffer | undefined {
    const f = this.render().findings.get(key);
    if (f === undefined) return undefined;
    const answer: TimelineAnswer = { key, timeline: findingTimeline(f, this.pipeline.evidence) ?? null };
    return Buffer.from(JSON.stringify(answer));
  }

  private render(): Render {
    const now = this.pipeline.clock();
    // A clock that went back (a test's, a stepped system clock) is no reason to keep a render for good.
    const last = this.last;
    if (last && now >= last.at && now - last.at < reuseMs(last.took)) return last;
    // The previous render goes before the next is made: never two held at once.
    this.last = undefined;
    this.rendered();
    const start = performance.now();
    const data = livePageData(this.pipeline, this.config);
    const findings = new Map<string, Finding>();
    data.findings.forEach((f, i) => {
      const key = data.request_keys[i]!;
      if (!findings.has(key)) findings.set(key, f);
    });
    const json = JSON.stringify(data);
    return (this.last = { at: now, took: performance.now() - start, json, findings });
  }
}

/** How long a render that took `took` ms is reused. */
function reuseMs(took: number): number {
  return Math.min(PAGE_REUSE_MAX_MS, Math.max(PAGE_REUSE_MS, took * REUSE_PER_RENDER_MS));
}
