import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { runLoad, runScenario } from '@resumewatch/lab';
import { FindingKind, ROUTE_PAGE, ROUTE_PAGE_DATA } from '@resumewatch/semconv';
import { toSpanRecord, type SpanRecord } from '@resumewatch/detector';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, startServer, type RunningServer } from '../src/index.js';
import { analyzeToHtml } from '../src/page/report.js';
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
        page.on('request', (r) => {
          if (r.url().endsWith(ROUTE_PAGE_DATA)) sent.push(r.headers().authorization ?? '');
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
