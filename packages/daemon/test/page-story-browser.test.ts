import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_MCP_SESSION_ID,
  ErrorType,
  FindingKind,
  RequestRecovery,
  SPAN_LISTENING_REFUSED,
} from '@resumewatch/semconv';
import { toSpanRecord, type SpanRecord } from '@resumewatch/detector';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { runScenario } from '@resumewatch/lab';
import { startRig } from './helpers/lab-rig.js';
import { waitFor } from '../../detector/test/helpers/wait.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../src/index.js';
import { htmlReportOfSpans } from '../src/page/report.js';
import { launchChromium, watchPolicy, type Browser, type Page } from './helpers/browser.js';
import { T0, requestEnded, span } from '../../detector/test/helpers/spans.js';

// Every finding's story and each request's life, in a real browser (Debian's chromium): the HTML report of
// spans the real detector read, opened offline. A lost_result: its request's 5 s as a bar, its end marked
// (aborted), its sentence; a dead-session loop: its refused requests on one lane.

const TIMEOUT = 60_000;
const dir = mkdtempSync(join(tmpdir(), 'resumewatch-story-'));

/** Request `n` on the dead session `dead`, answered 404 (the server no longer knows the session). */
function refused(n: number): SpanRecord {
  const s = requestEnded({ session: 'dead', request: 100 + n }, T0 + 20_000 + n * 200 + 30, '404', {
    start: T0 + 20_000 + n * 200,
  });
  return {
    ...s,
    spanId: (0x100 + n).toString(16).padStart(16, '0'),
    attributes: { ...s.attributes, [ATTR_HTTP_RESPONSE_STATUS_CODE]: 404 },
  };
}

/** A GET for session `quiet`'s listening stream, refused 405 (the server offers none). */
function refusedGet(n: number): SpanRecord {
  const s = span(SPAN_LISTENING_REFUSED, T0 + 40_000 + n * 100, {
    [ATTR_MCP_SESSION_ID]: 'quiet',
    [ATTR_HTTP_RESPONSE_STATUS_CODE]: 405,
  });
  return { ...s, spanId: (0x200 + n).toString(16).padStart(16, '0') };
}

const SPANS: SpanRecord[] = [
  // A tools/call of 5 s, aborted by its client after its stream ended without the result.
  {
    ...requestEnded({ session: 'sess-1', request: 7 }, T0 + 5000, ErrorType.ABORTED, {
      start: T0,
      recovery: RequestRecovery.NOT_RESUMED,
    }),
    spanId: '00000000000000aa',
  },
  ...[1, 2, 3, 4, 5, 6].map(refused),
  ...[1, 2, 3, 4, 5, 6, 7, 8].map(refusedGet),
];

let browser: Browser;
let page: Page;
let policy: () => Promise<string[]>;
beforeAll(async () => {
  browser = await launchChromium();
  const report = join(dir, 'stories.html');
  writeFileSync(report, htmlReportOfSpans(SPANS, DEFAULT_CONFIG, 'resumewatch: stories'));
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  policy = await watchPolicy(page);
  await page.goto(pathToFileURL(report).href);
}, TIMEOUT);
afterAll(async () => {
  await browser?.close();
});

/** Opens the first finding of `kind` by the keyboard; its timeline's story, lanes, bars and end marks. */
async function open(kind: string) {
  await page.selectOption('#filter-kind', kind);
  await page.focus('.finding');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.lane');
  return {
    story: await page.textContent('.story'),
    legend: await page.textContent('.legend'),
    heading: await page.textContent('section[aria-label="request timeline"] h2'),
    lanes: await page.$$eval('.lane', (ls) => ls.map((l) => l.getAttribute('aria-label'))),
    bars: await page.$$eval('.bar.life', (bs) =>
      bs.map((b) => ({ ended: b.getAttribute('data-ended'), label: b.getAttribute('aria-label') })),
    ),
    marks: await page.$$eval('.end-mark', (ms) => ms.map((m) => m.textContent)),
    rows: await page.$$eval('table.events tbody tr', (rs) => rs.map((r) => r.textContent)),
  };
}

describe("a finding's story in chromium", () => {
  it(
    "lost_result: the request's life as a bar, its end marked aborted, and the sentence saying what happened",
    async () => {
      const tl = await open(FindingKind.LOST_RESULT);
      expect(tl.story).toMatch(
        /^The tools\/call request 7 lived 5 s, from \S+ UTC to \S+ UTC, and ended aborted by the client without its result; .*never resumed it/,
      );
      expect(tl.bars).toEqual([{ ended: ErrorType.ABORTED, label: 'request lived 5.00 s, ended: abort' }]);
      expect(tl.marks).toEqual(['\u25c6 abort']);
      expect(tl.legend).toMatch(/A bar: a request’s life; ◆ what ended it/);
      expect(tl.rows.join(' ')).toMatch(/lived 5\.00 s, ended: abort/);
      expect(await policy()).toEqual([]);
    },
    TIMEOUT,
  );

  it(
    'dead_session_loop: its refused requests on one lane, each ended by the refusal, and its sentence',
    async () => {
      const tl = await open(FindingKind.DEAD_SESSION_LOOP);
      expect(tl.lanes).toEqual(['refused requests']);
      expect(tl.bars.length).toBeGreaterThanOrEqual(DEFAULT_CONFIG.sessionLoopThreshold);
      expect(new Set(tl.marks)).toEqual(new Set(['\u25c6 refused 404']));
      expect(tl.story).toMatch(
        /^The client sent \d+ requests on session dead .* each refused with 404, and initialized no new session/,
      );
    },
    TIMEOUT,
  );

  it(
    'listening_stream_loop: its refused GETs on one lane, where each happened, and its sentence',
    async () => {
      const tl = await open(FindingKind.LISTENING_STREAM_LOOP);
      expect(tl.lanes).toEqual(['listening stream opens']);
      expect(tl.legend).toMatch(/N: a GET of the listening stream the server refused/);
      const lefts = await page.$$eval('.ev.listening_refused', (es) =>
        es.map((e) => parseFloat((e as unknown as { style: { left: string } }).style.left)),
      );
      expect(lefts.length).toBeGreaterThan(DEFAULT_CONFIG.listeningLoopThreshold);
      // One after another along the axis, as they happened.
      expect([...lefts].sort((a, b) => a - b)).toEqual(lefts);
      expect(lefts[0]).toBe(0);
      expect(tl.rows.join(' ')).toContain(`${ATTR_HTTP_RESPONSE_STATUS_CODE} 405`);
      expect(tl.story).toMatch(
        /^The client opened its listening stream on session quiet \d+ times .* each answered 405: a listening-stream loop\.$/,
      );
    },
    TIMEOUT,
  );
});

describe("the lab's resume-loses-result, its lost_result in chromium", () => {
  it(
    "the request's life ends at its deadline, marked, and the sentence tells the resume and the end",
    async () => {
      const spans: SpanRecord[] = [];
      const tee = (batch: readonly ReadableSpan[]): void => void spans.push(...batch.map((x) => toSpanRecord(x)));
      const rig = await startRig('client', 'json', { tee, requestTimeoutMs: 3_000 });
      try {
        const summary = await runScenario('resume-loses-result', {
          serverUrl: rig.lab.url,
          controlUrl: rig.lab.controlUrl,
          fetch: rig.fetch,
          maxReconnects: 10,
        });
        await rig.settle();
        await waitFor(
          () => rig.findings(summary.sessionId).some((f) => f.kind === FindingKind.LOST_RESULT),
          'the lost_result',
        );
        await rig.settle();
      } finally {
        await rig.close();
      }
      const report = join(dir, 'lost.html');
      writeFileSync(report, htmlReportOfSpans(spans, DEFAULT_CONFIG, 'resumewatch: resume-loses-result'));
      await page.goto(pathToFileURL(report).href);
      const tl = await open(FindingKind.LOST_RESULT);
      // Before: "2 lanes, 3 events", a call and a resume, no bar for the request's life and no end.
      expect(tl.bars).toEqual([
        {
          ended: ErrorType.TIMEOUT,
          label: expect.stringMatching(/^request lived \S+ s, ended: deadline \(timeout\)$/),
        },
      ]);
      expect(tl.marks).toEqual(['\u25c6 deadline (timeout)']);
      expect(tl.story).toMatch(
        /^The tools\/call request \S+ lived \S+ s, from \S+ UTC to \S+ UTC, and ended at its deadline \(timeout\) without its result; its stream had ended without the result and the client resumed it \(partial_replay\): the result never reached the application\.$/,
      );
    },
    TIMEOUT,
  );
});
