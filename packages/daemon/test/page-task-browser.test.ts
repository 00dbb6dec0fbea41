import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { FindingKind, ROUTE_PAGE, ROUTE_PAGE_TIMELINE, TaskStatus } from '@resumewatch/semconv';
import type { Finding, SpanRecord } from '@resumewatch/detector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pipeline } from '../src/doors/pipeline.js';
import { metricsHandler } from '../src/doors/metrics-server.js';
import { configWith } from '../src/doors/writing-pipeline.js';
import { pageData } from '../src/page/page-data.js';
import { renderPage } from '../src/page/render-html.js';
import { launchChromium, lowestContrast, watchPolicy, type Browser, type Page } from './helpers/browser.js';
import { duplicateTask, lostResult } from './helpers/task-spans.js';

// A task finding's timeline in a real browser (Debian's chromium): task spans fed to a pipeline as
// `serve` feeds its own (the detector, then the evidence), the finding of the task's kind reported as the
// detector reports one (to the evidence, then the findings stream), whatever task rules the detector has.
// The page draws from the spans and the finding alone. Then the report of the same, opened from file://.

const TIMEOUT = 90_000;
/** Where screenshots go when RESUMEWATCH_SCREENSHOTS names a directory (docs/ for the README). */
const SHOTS = process.env.RESUMEWATCH_SCREENSHOTS;
const dir = mkdtempSync(join(tmpdir(), 'resumewatch-page-task-'));

// The callbacks of page.evaluate run in the browser; the few DOM names they use, declared for them alone.
declare const document: { getElementById(id: string): { textContent: string | null } | null };

let browser: Browser;
const servers: Server[] = [];
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  for (const s of servers.splice(0)) s.close();
  await browser?.close();
});

/** A pipeline that has had the spans and then the finding, as serve's onFinding hands one on. */
function pipelineOf(spans: readonly SpanRecord[], findings: readonly Finding[]): Pipeline {
  const config = configWith();
  const pipeline = new Pipeline({ config });
  pipeline.ingest((sink) => {
    for (const s of spans) sink(s);
    return { spans: spans.length, invalid: 0 };
  });
  for (const f of findings) {
    pipeline.evidence.reported(f);
    pipeline.recent.push(f, JSON.stringify(f));
  }
  return pipeline;
}

/** The report `analyze --html` writes, of what the pipeline holds: every timeline in it. */
function reportOf(pipeline: Pipeline): string {
  const data = pageData({
    source: 'report',
    now: Date.now(),
    config: configWith(),
    stats: pipeline.detector.stats(),
    eras: pipeline.metrics.eraCounts(),
    spansPerSecond: undefined,
    door: {},
    findings: pipeline.recent.newestFitting(),
    evidence: pipeline.evidence,
    timelines: true,
  });
  return renderPage(data, { title: 'resumewatch: a task' });
}

/** What the task's timeline draws, lane by lane: each mark's type, text and position (percent of the axis). */
interface TaskLane {
  lane: string;
  marks: { type: string; text: string; left: number; label: string }[];
}

async function taskTimeline(page: Page, kind: string): Promise<{ lanes: TaskLane[]; story: string }> {
  await page.selectOption('#filter-kind', kind);
  await page.focus('.finding');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.story');
  const lanes = await page.$$eval('.lane', (lanes) =>
    lanes.map((l) => ({
      lane: l.getAttribute('aria-label') ?? '',
      marks: [...l.querySelectorAll('.ev')].map((e) => ({
        type: [...e.classList].find((c) => c !== 'ev' && !c.startsWith('mark-') && c !== 'other') ?? '',
        text: e.textContent ?? '',
        left: parseFloat((e as unknown as { style: { left: string } }).style.left),
        label: e.getAttribute('aria-label') ?? '',
      })),
    })),
  );
  const story = await page.$eval('.story', (e) => e.textContent ?? '');
  return { lanes, story };
}

const laneOf = (lanes: TaskLane[], name: string): TaskLane => {
  const found = lanes.find((l) => l.lane === name);
  expect(found, `lane ${name} of ${lanes.map((l) => l.lane).join(', ')}`).toBeDefined();
  return found!;
};
const marks = (l: TaskLane, type: string) => l.marks.filter((m) => m.type === type);

/** The lost task result's drawing: one creation, four poll ticks, the change to completed, the ttl's end, the gone answer. */
function expectLostResult(lanes: TaskLane[], story: string, expected: string): void {
  expect(lanes.map((l) => l.lane)).toEqual(['task', 'task \u00b7 polls']);
  const life = laneOf(lanes, 'task');
  const polls = laneOf(lanes, 'task \u00b7 polls');
  expect(marks(polls, 'poll_tick')).toHaveLength(4);
  expect(polls.marks.every((m) => m.type === 'poll_tick' && m.text === '')).toBe(true);
  expect(polls.marks[0]!.label).toMatch(/^poll \(tasks\/get\) at \+480 ms$/);
  const [createdMark] = marks(life, 'created');
  const status = marks(life, 'status_change');
  const [ttl] = marks(life, 'ttl');
  const [gone] = marks(life, 'gone');
  expect(marks(life, 'created')).toHaveLength(1);
  expect(status.map((m) => m.text)).toEqual([TaskStatus.COMPLETED]);
  expect(marks(life, 'ttl')).toHaveLength(1);
  expect(marks(life, 'gone')).toHaveLength(1);
  expect(marks(life, 'delivered')).toHaveLength(0);
  expect(gone!.label).toMatch(/gone: not found/);
  // One axis: created, the polls, completed, the ttl's end, then the poll answered gone, the last thing drawn.
  const pollsAt = polls.marks.map((m) => m.left);
  expect(createdMark!.left).toBeLessThan(pollsAt[0]!);
  expect(pollsAt[1]!).toBeLessThan(status[0]!.left);
  expect(status[0]!.left).toBeLessThan(pollsAt[2]!);
  expect(pollsAt[2]!).toBeLessThan(ttl!.left);
  expect(ttl!.left).toBeLessThan(pollsAt[3]!);
  expect(pollsAt[3]!).toBeLessThanOrEqual(gone!.left);
  expect(gone!.left).toBe(100);
  expect(story).toBe(expected);
}

describe("a task's timeline in chromium", () => {
  it(
    'lost_task_result, live and as a report: creation, poll ticks, the status change, the ttl and the gone answer on one axis, and its story',
    { timeout: TIMEOUT },
    async () => {
      const { spans, finding } = lostResult();
      const pipeline = pipelineOf(spans, [finding]);
      const server = createServer(metricsHandler(pipeline, configWith()));
      servers.push(server);
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      const refused = await watchPolicy(page);
      const timelines: string[] = [];
      page.on('request', (r) => {
        if (new URL(r.url()).pathname === ROUTE_PAGE_TIMELINE) timelines.push(r.url());
      });
      await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}${ROUTE_PAGE}`);
      await page.waitForSelector('.finding');
      // The finding names its task, in the list and on the detail.
      expect(await page.textContent('#findings')).toContain('task task-lost-1');
      const { lanes, story } = await taskTimeline(page, FindingKind.LOST_TASK_RESULT);
      // Fetched on its own when opened: the task's key.
      expect(timelines.length).toBeGreaterThan(0);
      const expected =
        'The task completed at 08:00:01.200 UTC, its client asked for the result after its ttl (it ran out at ' +
        '08:00:02.020 UTC) and was told at 08:00:02.604 UTC that it was not found: the result never reached it.';
      expectLostResult(lanes, story, expected);
      expect(await page.textContent('#detail-title')).toBe('lost_task_result on task task-lost-1');
      // The events table lists every drawn mark, the ticks included.
      expect(await page.$$('table.events tbody tr')).toHaveLength(lanes.flatMap((l) => l.marks).length);
      for (const selector of ['.story', '.ev.created', '.ev.status_change', '.ev.gone', '.ev.ttl', '.task-note, .note'])
        expect(await lowestContrast(page, selector), selector).toBeGreaterThanOrEqual(4.5);
      if (SHOTS) await page.screenshot({ path: join(SHOTS, 'page-task.png'), fullPage: true });
      expect(errors).toEqual([]);
      expect(await refused()).toEqual([]);
      await page.close();

      // The report of the same, from file://: the timeline is in it, drawn the same.
      const report = join(dir, 'task.html');
      writeFileSync(report, reportOf(pipeline));
      const offline = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const refusedOffline = await watchPolicy(offline);
      await offline.goto(pathToFileURL(report).href);
      const drawn = await taskTimeline(offline, FindingKind.LOST_TASK_RESULT);
      expectLostResult(drawn.lanes, drawn.story, expected);
      expect(await refusedOffline()).toEqual([]);
      await offline.close();
    },
  );

  it(
    "duplicate_task: the first task and the re-issue's second task on one axis, the first attempt's broken call, the story",
    { timeout: TIMEOUT },
    async () => {
      const { spans, finding } = duplicateTask(true);
      const report = join(dir, 'duplicate-task.html');
      writeFileSync(report, reportOf(pipelineOf(spans, [finding])));
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const refused = await watchPolicy(page);
      await page.goto(pathToFileURL(report).href);
      const { lanes, story } = await taskTimeline(page, FindingKind.DUPLICATE_TASK);
      expect(lanes.map((l) => l.lane)).toEqual([
        'first task',
        'second task',
        'second task \u00b7 polls',
        'first attempt',
      ]);
      const [first] = marks(laneOf(lanes, 'first task'), 'created');
      const [second] = marks(laneOf(lanes, 'second task'), 'created');
      expect(first!.left).toBeLessThan(second!.left);
      expect(marks(laneOf(lanes, 'first attempt'), 'broken')).toHaveLength(1);
      expect(story).toMatch(
        /re-issued with the same idempotency key, and the server created a second task at .*: the work runs twice\.$/,
      );
      const data = JSON.parse(await page.evaluate(() => document.getElementById('page-data')!.textContent!)) as {
        findings: Finding[];
      };
      expect(data.findings[0]!.duplicate_task_id).toBe('task-second');
      expect(await refused()).toEqual([]);
      await page.close();
    },
  );
});
