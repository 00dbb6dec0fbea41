import { ATTR_MCP_STREAM_KIND, FindingKind, ProtocolEra, StreamKind } from '@resumewatch/semconv';
import type { DetectorStats, Finding } from '@resumewatch/detector';
import type { ResumewatchConfig } from '../config.js';
import type { Evidence, EvidenceStats } from './evidence.js';
import { drawReissueTimeline, drawTimeline, type DrawnTimeline } from './timeline-view.js';
import { EventType, findingKey, isLoopFinding, isReissueFinding, isTaskFinding } from './timeline-event.js';
import { drawTaskTimeline } from './timeline-task.js';
import { findingStory } from './finding-story.js';

/** Where the data comes from: a running detector, or recorded traces (`analyze --html`). */
type PageSource = 'serve' | 'report';

/** The header: what the detector holds and the limits it runs under. */
export interface PageHeader {
  source: PageSource;
  generated_unix_ms: number;
  tracked_requests: number;
  open_storms: number;
  /** Spans received per second lately; null when not known (a report, a detector just started). */
  spans_per_second: number | null;
  /** MCP requests seen by protocol era. */
  eras: Record<ProtocolEra, number>;
  evidence: EvidenceStats;
  /** Each limit by its flag name: the value it runs under. */
  limits: Record<string, number>;
  /**
   * The metrics the door running the detector adds to /metrics (the gateway's exchanges, refusals and
   * guard actions), as it counts them: by metric name, by label values. Empty for `serve` and a report.
   */
  door: Record<string, Record<string, number>>;
}

/** What the page shows, and what GET ROUTE_PAGE_DATA answers. */
export interface PageData {
  header: PageHeader;
  /** The findings stream, newest first: the newest that fit in --findings-bytes, as /findings has them. */
  findings: Finding[];
  /** Findings held but left out by the byte bound. */
  omitted: number;
  /** The key of each finding's request, in the order of `findings`: where its timeline is in `timelines`. */
  request_keys: string[];
  /**
   * By request key: the evidence held for each request in `findings`, in a report. Empty on a live page,
   * which fetches one request's timeline at a time (ROUTE_PAGE_TIMELINE) when a finding is opened.
   */
  timelines: Record<string, DrawnTimeline>;
}

/** What the data is read from. */
export interface PageSources {
  source: PageSource;
  now: number;
  config: ResumewatchConfig;
  stats: DetectorStats;
  eras: Record<ProtocolEra, number>;
  spansPerSecond: number | undefined;
  door: Record<string, Record<string, number>>;
  /** Newest first, bounded. */
  findings: { findings: Finding[]; omitted: number };
  evidence: Evidence;
  /**
   * Draw every finding's timeline into the data (a report, a file that fetches nothing). A live page
   * leaves them out: drawing them all is the render's synchronous work, up to the whole evidence.
   */
  timelines: boolean;
}

/** The limits worth knowing when reading the page: their flag names and values. */
const LIMITS: readonly (keyof ResumewatchConfig)[] = [
  'maxRequests',
  'stormThreshold',
  'stormWindowMs',
  'retentionMs',
  'findingsBuffer',
  'findingsMaxBytes',
  'evidenceBytes',
  'evidenceWindowBytes',
];

/**
 * The timeline of a finding's request, drawn from the evidence: at most one request's held events (a
 * re-issue's, its two attempts'), whatever else the evidence holds. Undefined when none is held.
 */
export function findingTimeline(f: Finding, evidence: Evidence): DrawnTimeline | undefined {
  // A task's finding: its task's spans (a duplicate's two tasks), on one time axis.
  if (isTaskFinding(f)) {
    const task = evidence.task(f);
    return task.task?.events.length || task.second?.events.length ? drawTaskTimeline(f, task) : undefined;
  }
  // A 2026-07-28 re-issue: both attempts, each its own trace, on one time axis.
  const drawn = isReissueFinding(f)
    ? drawReissueTimeline(f, evidence.attempts(f))
    : isLoopFinding(f)
      ? drawLoopTimeline(f, evidence.timeline(f))
      : drawHeld(evidence.timeline(f));
  // Every finding's story in one sentence, from its fields and the times its spans carry.
  if (drawn) drawn.story = findingStory(f, drawn.events);
  return drawn;
}

/**
 * A loop: its session's refused attempts on one lane, each where it happened. A dead session's: its
 * requests (each a bar, its end marked by the refusal); a listening stream's: its GETs (refused, or
 * streams closed at once), none of the other kind.
 */
function drawLoopTimeline(f: Finding, held: ReturnType<Evidence['timeline']>): DrawnTimeline | undefined {
  if (!held) return undefined;
  const listening = f.kind === FindingKind.LISTENING_STREAM_LOOP;
  const events = held.events.filter(
    (e) =>
      (e.type === EventType.LISTENING_REFUSED || e.attributes[ATTR_MCP_STREAM_KIND] === StreamKind.LISTENING) ===
      listening,
  );
  if (events.length === 0) return undefined;
  const drawn = drawTimeline({ events, dropped: held.dropped });
  drawn.lanes = [{ stream: '', resumed: false, label: listening ? 'listening stream opens' : 'refused requests' }];
  for (const e of drawn.events) e.lane = 0;
  return drawn;
}

function drawHeld(held: ReturnType<Evidence['timeline']>): DrawnTimeline | undefined {
  return held ? drawTimeline(held) : undefined;
}

export function pageData(s: PageSources): PageData {
  const limits: Record<string, number> = {};
  for (const key of LIMITS) limits[key] = s.config[key] as number;
  const timelines: Record<string, DrawnTimeline> = {};
  const requestKeys: string[] = [];
  for (const f of s.findings.findings) {
    // The evidence's own key of the request (one owner): the page reads it from request_keys.
    const key = findingKey(f);
    requestKeys.push(key);
    if (!s.timelines || key in timelines) continue;
    const drawn = findingTimeline(f, s.evidence);
    if (drawn) timelines[key] = drawn;
  }
  return {
    header: {
      source: s.source,
      generated_unix_ms: s.now,
      tracked_requests: s.stats.tracked,
      open_storms: s.stats.activeStorms,
      spans_per_second: s.spansPerSecond ?? null,
      eras: s.eras,
      evidence: s.evidence.stats(),
      limits,
      door: s.door,
    },
    findings: s.findings.findings,
    omitted: s.findings.omitted,
    request_keys: requestKeys,
    timelines,
  };
}
