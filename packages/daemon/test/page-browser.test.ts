import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { instrumentFetch, instrumentMcpServer } from '@resumewatch/instrumentation';
import { runLoad, runScenario } from '@resumewatch/lab';
import { ATTR_SERVICE_NAME, FindingKind, ROUTE_PAGE, ROUTE_PAGE_DATA, ROUTE_PAGE_TIMELINE } from '@resumewatch/semconv';
import { toSpanRecord, type Finding, type SpanRecord } from '@resumewatch/detector';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, startServer, type RunningServer } from '../src/index.js';
import { analyzeToHtml, htmlReportOfSpans } from '../src/page/report.js';
import {
  expectDuplicatesOnDistinctLanes,
  launchChromium,
  lowestContrast,
  timelineOf,
  watchPolicy,
} from './helpers/browser.js';
import { startRig, type Rig } from './helpers/lab-rig.js';
import { otlpJson } from '../../detector/test/helpers/otlp.js';
import { waitFor } from '../../detector/test/helpers/wait.js';
import { seedScenario } from '../../detector/test/helpers/spans.js';

// The page in a real browser (Debian's chromium), fed by real lab runs through real OTLP exporters into
// an in-process `resumewatch serve`; and the HTML report of the same spans, opened offline.

const TIMEOUT = 90_000;

// The callbacks of page.evaluate run in the browser; the few DOM names they use, declared for them alone.
type Dataset = { dataset: Record<string, string | undefined> };
declare const document: {
  activeElement: Dataset | null;
  documentElement: { scrollWidth: number };
  getElementById(id: string): { textContent: string | null } | null;
  querySelectorAll(selector: string): ArrayLike<{ textContent: string | null }>;
};
declare const window: { innerWidth: number };
const dir = mkdtempSync(join(tmpdir(), 'resumewatch-page-'));
/** Where screenshots go when RESUMEWATCH_SCREENSHOTS names a directory (docs/ for the README). */
const SHOTS = process.env.RESUMEWATCH_SCREENSHOTS;

let browser: Browser;
const rigs: Rig[] = [];
const servers: RunningServer[] = [];
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await Promise.allSettled([...rigs.splice(0), ...servers.splice(0)].map((r) => r.close()));
  await browser?.close();
});

/** One seed loop run through a rig; its spans also kept as records for the report. */
async function seedLoop(): Promise<{ rig: Rig; spans: SpanRecord[] }> {
  const spans: SpanRecord[] = [];
  const tee = (batch: readonly ReadableSpan[]): void => void spans.push(...batch.map((s) => toSpanRecord(s)));
  const rig = await startRig('client', 'json', { tee });
  rigs.push(rig);
  const summary = await runScenario('seed-loop', {
    serverUrl: rig.lab.url,
    controlUrl: rig.lab.controlUrl,
    fetch: rig.fetch,
    maxReconnects: 10,
  });
  await rig.settle();
  await waitFor(
    () => rig.findings(summary.sessionId).some((f) => f.kind === FindingKind.SIGNATURE),
    'the seed loop signature',
  );
  return { rig, spans };
}

describe('the page in chromium', () => {
  it(
    'draws the seed loop: the duplicate terminals on distinct lanes; readable, by keyboard, on a phone',
    { timeout: TIMEOUT },
    async () => {
      const { rig, spans } = await seedLoop();
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`http://127.0.0.1:${rig.detector.metricsPort}${ROUTE_PAGE}`);
      await page.waitForSelector('.lane');
      if (SHOTS) await page.screenshot({ path: join(SHOTS, 'page-seed-loop.png'), fullPage: true });
      const lanes = await timelineOf(page, FindingKind.DUPLICATE_TERMINAL);
      expectDuplicatesOnDistinctLanes(lanes);
      // Keyboard: the filters, then the findings (arrow keys move between them), then the timeline's events.
      await page.selectOption('#filter-kind', '');
      await page.focus('.finding');
      const first = await page.evaluate(() => document.activeElement?.dataset.id);
      await page.keyboard.press('ArrowDown');
      const second = await page.evaluate(() => document.activeElement?.dataset.id);
      expect(second).not.toBe(first);
      await page.keyboard.press('Enter');
      const current = await page.$$eval('.finding[aria-current="true"]', (b) =>
        b.map((e) => (e as unknown as Dataset).dataset.id),
      );
      expect(current).toEqual([second]);
      // WCAG AA for the main text against its background.
      for (const selector of [
        'h1',
        '.stats dd',
        '.stats dt',
        '.finding .kind',
        '.finding .meta',
        '.lane-name',
        '.ev',
        'table.events td',
      ])
        expect(await lowestContrast(page, selector), selector).toBeGreaterThanOrEqual(4.5);
      // A phone: one column, nothing wider than the screen but the chart's own scroll.
      await page.setViewportSize({ width: 390, height: 800 });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow).toBeLessThanOrEqual(0);
      if (SHOTS) await page.screenshot({ path: join(SHOTS, 'page-phone.png'), fullPage: false });
      expect(errors).toEqual([]);
      await page.close();

      // The report of the same spans, opened from file:// with every network request refused.
      const traces = join(dir, 'seed-loop.jsonl');
      writeFileSync(traces, JSON.stringify(otlpJson(spans, rig.service)) + '\n');
      const { html } = await analyzeToHtml([traces], DEFAULT_CONFIG);
      const report = join(dir, 'report.html');
      writeFileSync(report, html);
      const context = await browser.newContext({ offline: true });
      const requested: string[] = [];
      await context.route('**/*', (route) => {
        const url = route.request().url();
        if (url.startsWith('file:')) return route.continue();
        requested.push(url);
        return route.abort();
      });
      const offline = await context.newPage();
      const refusedOffline = await watchPolicy(offline);
      await offline.goto(pathToFileURL(report).href);
      expectDuplicatesOnDistinctLanes(await timelineOf(offline, FindingKind.DUPLICATE_TERMINAL));
      expect(requested).toEqual([]);
      // Its policy is a meta tag (a file has no headers): its script and style by hash, and it refuses nothing of them.
      expect(html).toMatch(/<meta http-equiv="Content-Security-Policy" content="[^"]*script-src 'sha256-/);
      expect(html).not.toContain('unsafe-inline');
      expect(await refusedOffline()).toEqual([]);
      await context.close();
    },
  );

  it('a healthy run shows no finding', { timeout: TIMEOUT }, async () => {
    const rig = await startRig('client', 'json');
    rigs.push(rig);
    const report = await runLoad('healthy', {
      serverUrl: rig.lab.url,
      controlUrl: rig.lab.controlUrl,
      fetch: rig.fetch,
      clients: 2,
      durationMs: 1_000,
    });
    expect(report.failures).toBe(0);
    await rig.settle();
    expect(rig.detector.detector.stats().spans.accepted).toBeGreaterThan(0);
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${rig.detector.metricsPort}${ROUTE_PAGE}`);
    await expect(page.textContent('#findings')).resolves.toContain('No finding.');
    expect(await page.$$('.finding')).toHaveLength(0);
    expect(await page.$$('.lane')).toHaveLength(0);
    await page.close();
  });

  it(
    '--token with + % & = / # and a space: read from the fragment, sent as given; the policy refuses nothing; live updates',
    { timeout: TIMEOUT },
    async () => {
      const token = 'p+q/r=s&t%u v#w';
      const server = await startServer({ port: 0, grpcPort: false, metricsPort: 0, output: null, token });
      servers.push(server);
      const post = async (request: number): Promise<void> => {
        const spans = seedScenario({ session: `s-${request}`, request }, 3).map((s, i) => ({
          ...s,
          spanId: (request * 64 + i + 1).toString(16).padStart(16, '0'),
        }));
        const r = await fetch(`http://127.0.0.1:${server.httpPort}/v1/traces`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify(otlpJson(spans, 'page-token')),
        });
        expect(r.status).toBe(200);
      };
      await post(1);
      const base = `http://127.0.0.1:${server.metricsPort}${ROUTE_PAGE}`;
      // As encodeURIComponent writes it, and as a person might type it: + / = # and the space as they are.
      for (const fragment of [encodeURIComponent(token), 'p+q/r=s%26t%25u v#w']) {
        const page = await browser.newPage();
        const refused = await watchPolicy(page);
        const sent: string[] = [];
        const timelines: string[] = [];
        page.on('request', (r) => {
          if (r.url().endsWith(ROUTE_PAGE_DATA)) sent.push(r.headers().authorization ?? '');
          // The opened finding's timeline, fetched on its own (the data holds none), with the token too.
          if (new URL(r.url()).pathname === ROUTE_PAGE_TIMELINE) timelines.push(r.headers().authorization ?? '');
        });
        const answer = await page.goto(`${base}#token=${fragment}`);
        // The page itself came without the token: the header policy is on it.
        expect(answer!.status()).toBe(401);
        expect(answer!.headers()['content-security-policy']).toMatch(/script-src 'sha256-[^']+'/);
        // The findings, or the page's word that the token was refused.
        await page.waitForSelector('.finding, #updates:not(:empty)');
        expect(await page.textContent('#updates')).toBe('');
        expect(page.url()).toBe(base);
        expect(sent[0]).toBe(`Bearer ${token}`);
        // The chosen finding's timeline is drawn: its events placed through the CSSOM, which the policy allows.
        await page.waitForSelector('.lane .ev');
        expect(timelines[0]).toBe(`Bearer ${token}`);
        if (fragment !== encodeURIComponent(token)) {
          // Live: a finding made since the page opened shows up by itself.
          await post(2);
          await page.waitForFunction(() => /request 2\b/.test(document.getElementById('findings')!.textContent!));
        }
        expect(await refused()).toEqual([]);
        await page.close();
      }
    },
  );
});

/**
 * modern-broken-reissue on the real v2 SDK (the call's stream cut after its first event, `charge` running
 * on, the application re-issuing it): the client's spans (instrumentFetch) and, with `server`, the v2
 * server's (instrumentMcpServer), one trace per attempt, as `pnpm start` records them.
 */
async function modernReissue(server: boolean): Promise<SpanRecord[]> {
  const spans: SpanRecord[] = [];
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'page-2026-07-28' }),
    spanProcessors: [
      {
        onStart: () => undefined,
        onEnd: (span) => void spans.push(toSpanRecord(span)),
        forceFlush: () => Promise.resolve(),
        shutdown: () => Promise.resolve(),
      },
    ],
  });
  // The client's request span goes to the server in `traceparent`: the server's span joins its trace.
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  try {
    const summary = await runScenario('modern-broken-reissue', {
      // The scenario starts its own v2 server: this URL is never called.
      serverUrl: 'http://127.0.0.1:9/mcp',
      client: 'sdk-v2',
      fetch: instrumentFetch({ tracerProvider: provider }),
      modernServer: server ? { decorateServer: (s) => instrumentMcpServer(s, { tracerProvider: provider }) } : {},
    });
    expect(summary.sideEffectCount, summary.finding).toBe(2);
  } finally {
    await provider.shutdown();
    propagation.disable();
  }
  return spans;
}

/** What a re-issue's timeline draws on each lane: its name, its events (class and position), what is not known. */
interface DrawnLane {
  lane: string;
  events: { type: string; mark: string; left: number }[];
  unknown: string;
}

async function reissueLanes(page: Page, kind: FindingKind): Promise<DrawnLane[]> {
  await page.selectOption('#filter-kind', kind);
  await page.focus('.finding');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.lane');
  return page.$$eval('.lane', (lanes) =>
    lanes.map((l) => ({
      lane: l.getAttribute('aria-label') ?? '',
      events: [...l.querySelectorAll('.ev')].map((e) => ({
        type:
          [...e.classList].find((c) => c !== 'ev' && !c.startsWith('mark-') && c !== 'other' && c !== 'guard') ?? '',
        mark: (e as unknown as Dataset).dataset.mark ?? '',
        left: parseFloat((e as unknown as { style: { left: string } }).style.left),
      })),
      unknown: l.querySelector('.unknown')?.textContent ?? '',
    })),
  );
}

/** The detail's text holds the finding's times as dates and times, never as Unix milliseconds. */
async function expectDatesNotMilliseconds(page: Page, f: Finding): Promise<void> {
  const text = await page.evaluate(() => document.getElementById('detail')!.textContent!);
  for (const ms of [f.first_time_unix_ms, f.last_time_unix_ms]) {
    expect(text).not.toContain(String(Math.trunc(ms)));
    expect(text).toContain(new Date(ms).toISOString().replace('T', ' ').replace('Z', ' UTC'));
  }
  expect(text).not.toMatch(/_unix_ms/);
}

const lane = (lanes: DrawnLane[], name: string): DrawnLane => {
  const found = lanes.find((l) => l.lane === name);
  expect(found, `lane ${name} of ${lanes.map((l) => l.lane).join(', ')}`).toBeDefined();
  return found!;
};
const at = (l: DrawnLane, type: string): number => {
  const e = l.events.find((ev) => ev.type === type);
  expect(e, `${type} on ${l.lane}`).toBeDefined();
  return e!.left;
};

describe('the 2026-07-28 story in chromium', () => {
  it(
    "duplicate_execution: both attempts on one time axis, the broken stream, the server running on, the re-issue's result",
    { timeout: TIMEOUT },
    async () => {
      const spans = await modernReissue(true);
      // The report `pnpm start` writes, opened from file://.
      const html = htmlReportOfSpans(spans, DEFAULT_CONFIG, 'resumewatch: a 2026-07-28 re-issue');
      const report = join(dir, 'reissue.html');
      writeFileSync(report, html);
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const refused = await watchPolicy(page);
      await page.goto(pathToFileURL(report).href);
      const lanes = await reissueLanes(page, FindingKind.DUPLICATE_EXECUTION);
      if (SHOTS) await page.screenshot({ path: join(SHOTS, 'page-reissue.png'), fullPage: true });
      expect(lanes.map((l) => l.lane)).toEqual([
        'first attempt \u00b7 client',
        'first attempt \u00b7 server',
        're-issue \u00b7 client',
        're-issue \u00b7 server',
      ]);
      const [firstClient, firstServer, reissueClient] = [
        lane(lanes, 'first attempt \u00b7 client'),
        lane(lanes, 'first attempt \u00b7 server'),
        lane(lanes, 're-issue \u00b7 client'),
      ];
      // One axis: the first attempt, its stream broken, the server running on after it, then the re-issue and its result.
      expect(firstClient.events.map((e) => e.type).sort()).toEqual(['broken', 'call']);
      expect(firstServer.events.map((e) => e.type).sort()).toEqual(['call', 'ran_on']);
      expect(at(firstClient, 'call')).toBeLessThan(at(firstClient, 'broken'));
      expect(at(firstServer, 'ran_on')).toBeGreaterThan(at(firstServer, 'call'));
      expect(at(firstClient, 'broken')).toBeLessThan(at(reissueClient, 'call'));
      expect(at(firstServer, 'ran_on')).toBeLessThan(at(reissueClient, 'call'));
      expect(reissueClient.events.filter((e) => e.type === 'terminal').map((e) => e.mark)).toEqual(['live']);
      expect(at(reissueClient, 'terminal')).toBeGreaterThanOrEqual(at(reissueClient, 'call'));
      expect(lanes.every((l) => l.unknown === '')).toBe(true);
      const notes = await page.$$eval('.reissue-note', (n) => n.map((e) => e.textContent));
      expect(notes.join(' ')).toMatch(/the work ran twice/);
      const finding = (
        JSON.parse(await page.evaluate(() => document.getElementById('page-data')!.textContent!)) as {
          findings: Finding[];
        }
      ).findings.find((f) => f.kind === FindingKind.DUPLICATE_EXECUTION)!;
      await expectDatesNotMilliseconds(page, finding);
      expect(await refused()).toEqual([]);
      await page.close();

      // The same spans through OTLP into a live `serve`: its page draws the same lanes.
      const server = await startServer({ port: 0, grpcPort: false, metricsPort: 0, output: null });
      servers.push(server);
      const r = await fetch(`http://127.0.0.1:${server.httpPort}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(otlpJson(spans, 'page-2026-07-28')),
      });
      expect(r.status).toBe(200);
      const live = await browser.newPage();
      const refusedLive = await watchPolicy(live);
      await live.goto(`http://127.0.0.1:${server.metricsPort}${ROUTE_PAGE}`);
      await live.waitForSelector('.finding');
      const liveLanes = await reissueLanes(live, FindingKind.DUPLICATE_EXECUTION);
      expect(liveLanes.map((l) => [l.lane, l.events.map((e) => e.type).sort()])).toEqual(
        lanes.map((l) => [l.lane, l.events.map((e) => e.type).sort()]),
      );
      expect(await refusedLive()).toEqual([]);
      await live.close();
    },
  );

  it(
    'possible_duplicate_execution: what is known drawn, what is not said (no server span)',
    { timeout: TIMEOUT },
    async () => {
      const spans = await modernReissue(false);
      const report = join(dir, 'possible-reissue.html');
      writeFileSync(
        report,
        htmlReportOfSpans(spans, DEFAULT_CONFIG, 'resumewatch: a 2026-07-28 re-issue, client only'),
      );
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const refused = await watchPolicy(page);
      await page.goto(pathToFileURL(report).href);
      const lanes = await reissueLanes(page, FindingKind.POSSIBLE_DUPLICATE_EXECUTION);
      expect(lanes.map((l) => l.lane)).toEqual([
        'first attempt \u00b7 client',
        'first attempt \u00b7 server',
        're-issue \u00b7 client',
      ]);
      expect(
        lane(lanes, 'first attempt \u00b7 client')
          .events.map((e) => e.type)
          .sort(),
      ).toEqual(['broken', 'call']);
      const unknown = lane(lanes, 'first attempt \u00b7 server');
      expect(unknown.events).toEqual([]);
      expect(unknown.unknown).toMatch(
        /^not known: no span says whether the server stopped or finished the first attempt/,
      );
      expect(lane(lanes, 're-issue \u00b7 client').events.map((e) => e.mark)).toContain('live');
      const notes = (await page.$$eval('.reissue-note', (n) => n.map((e) => e.textContent))).join(' ');
      expect(notes).toMatch(/^Known: the first attempt's stream broke before its result, and the call was re-issued\./);
      expect(notes).toMatch(/Not known: whether the server stopped the first attempt or ran it to the end/);
      const finding = (
        JSON.parse(await page.evaluate(() => document.getElementById('page-data')!.textContent!)) as {
          findings: Finding[];
        }
      ).findings.find((f) => f.kind === FindingKind.POSSIBLE_DUPLICATE_EXECUTION)!;
      await expectDatesNotMilliseconds(page, finding);
      expect(await refused()).toEqual([]);
      await page.close();
    },
  );
});
