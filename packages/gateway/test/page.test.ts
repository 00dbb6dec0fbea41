import { join } from 'node:path';
import { runScenario, startLabServer } from '@resumewatch/lab';
import {
  FindingKind,
  GuardAction,
  GuardProof,
  METRIC_GATEWAY_GUARD_ACTIONS_TOTAL,
  METRIC_GATEWAY_REFUSALS_TOTAL,
  ROUTE_PAGE,
} from '@resumewatch/semconv';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '@resumewatch/daemon';
import { startGateway, type RunningGateway } from '../src/index.js';
import {
  expectDuplicatesOnDistinctLanes,
  launchChromium,
  timelineOf,
  watchPolicy,
  type Browser,
  type Page,
} from '../../daemon/test/helpers/browser.js';
import { gatewayMcpUrl, settleGateway, waitFor } from './helpers/e2e-rig.js';

// The page on the gateway's metrics port, in a real browser (Debian's chromium): the unmodified seed
// client runs through a gateway in front of the lab server, and the page draws what the gateway saw,
// with the gateway's own counts in its header; with --token, the page takes the token from its address.

const TIMEOUT = 60_000;
/** Where screenshots go when RESUMEWATCH_SCREENSHOTS names a directory (docs/ for the README). */
const SHOTS = process.env.RESUMEWATCH_SCREENSHOTS;

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** A lab server and a gateway in front of it (its detector's metrics port with `token`, if any). */
async function labThrough(enforce: boolean, token?: string): Promise<{ gateway: RunningGateway; url: string }> {
  const lab = await startLabServer({ retryIntervalMs: 50 });
  closers.push(() => lab.close());
  const gateway = await startGateway({
    upstream: lab.url,
    port: 0,
    enforce,
    // The lab's clients connect directly: both proofs of receipt, as a direct deployment runs it.
    connectionProof: true,
    requestTimeoutMs: 10_000,
    detector: { config: { metricsPort: 0, token }, output: null },
  });
  closers.push(() => gateway.close());
  return { gateway, url: gatewayMcpUrl(gateway, lab.url) };
}

/** The seed loop through the gateway, observed: settled once its signature is found. */
async function seedLoopThrough(gateway: RunningGateway, url: string): Promise<void> {
  await runScenario('seed-loop', { serverUrl: url, fetch: globalThis.fetch, maxReconnects: 10 });
  await settleGateway(gateway);
  await waitFor(
    () => gateway.detector!.findings().some((f) => f.kind === FindingKind.SIGNATURE),
    'the seed loop signature',
  );
}

/** The page opened at `path`; `refused()` reads its uncaught errors and what its CSP refused. */
async function openPage(path: string): Promise<{ page: Page; refused: () => Promise<string[]> }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  closers.push(() => page.close());
  const refused = await watchPolicy(page);
  await page.goto(path);
  return { page, refused };
}

/** The header's value for a term (a stat's dt), as the page shows it. */
const headerValue = (page: Page, term: string): Promise<string> =>
  page.$$eval(
    '.stats div',
    (divs, t) => divs.find((d) => d.querySelector('dt')?.textContent === t)?.querySelector('dd')?.textContent ?? '',
    term,
  );

describe("the page on the gateway's metrics port, in chromium", () => {
  it(
    'the seed loop through the gateway: the duplicate terminals on distinct lanes; the gateway counts in the header',
    { timeout: TIMEOUT },
    async () => {
      const { gateway, url } = await labThrough(false);
      await seedLoopThrough(gateway, url);
      const { page, refused } = await openPage(`http://127.0.0.1:${gateway.detector!.metricsPort}${ROUTE_PAGE}`);
      expectDuplicatesOnDistinctLanes(await timelineOf(page, FindingKind.DUPLICATE_TERMINAL));
      // Observing, the gateway acted on nothing and refused nothing: the header says so.
      expect(await headerValue(page, METRIC_GATEWAY_GUARD_ACTIONS_TOTAL)).toBe('none');
      expect(await headerValue(page, METRIC_GATEWAY_REFUSALS_TOTAL)).toBe('none');
      if (SHOTS) await page.screenshot({ path: join(SHOTS, 'page-gateway.png'), fullPage: true });
      expect(await refused()).toEqual([]);
    },
  );

  it(
    "--enforce: the gateway's actions on the timeline and in the header (listening-replay, both replays dropped)",
    { timeout: TIMEOUT },
    async () => {
      const { gateway, url } = await labThrough(true);
      await runScenario('listening-replay', { serverUrl: url, fetch: globalThis.fetch, client: 'raw' });
      await settleGateway(gateway);
      await waitFor(() => gateway.detector!.findings().length > 0, 'the foreign_replay finding');
      const { page, refused } = await openPage(`http://127.0.0.1:${gateway.detector!.metricsPort}${ROUTE_PAGE}`);
      await page.selectOption('#filter-kind', FindingKind.FOREIGN_REPLAY);
      await page.focus('.finding');
      await page.keyboard.press('Enter');
      await page.waitForSelector('.lane');
      const acted = await page.$$eval('.ev.guard', (evs) => evs.map((e) => e.getAttribute('aria-label') ?? ''));
      expect(acted.length).toBeGreaterThan(0);
      for (const label of acted) expect(label).toContain(`guard ${GuardAction.DUPLICATE_TERMINAL_DROPPED}`);
      // Each count names the proof of receipt it rests on (which one depends on the connection the client reused).
      expect(await headerValue(page, METRIC_GATEWAY_GUARD_ACTIONS_TOTAL)).toMatch(
        new RegExp(`^${GuardAction.DUPLICATE_TERMINAL_DROPPED} (${GuardProof.NEXT_REQUEST}|${GuardProof.CURSOR}): \\d`),
      );
      expect(await refused()).toEqual([]);
    },
  );

  it(
    '--token: the page takes the token from its fragment, keeps it out of the address, fetches with it',
    { timeout: TIMEOUT },
    async () => {
      const { gateway, url } = await labThrough(false, 's3cret');
      await seedLoopThrough(gateway, url);
      const base = `http://127.0.0.1:${gateway.detector!.metricsPort}${ROUTE_PAGE}`;

      // Without the token: no data, and the page says how to give it.
      const bare = await openPage(base);
      await expect(bare.page.textContent('#updates')).resolves.toMatch(/asks for its bearer token.*#token=/);
      expect(await bare.page.$$('.finding')).toHaveLength(0);
      expect(await bare.page.content()).toContain('<script type="application/json" id="page-data">null</script>');

      // A wrong token: refused, said so.
      const wrong = await openPage(`${base}#token=nope`);
      await wrong.page.waitForFunction(() => /refused \(401\)/.test(document.getElementById('updates')!.textContent!));
      expect(await wrong.page.$$('.finding')).toHaveLength(0);

      // The token: the data comes by fetch with it, the address no longer shows it.
      const sent: (string | undefined)[] = [];
      const good = await browser.newPage();
      closers.push(() => good.close());
      good.on('request', (r) => sent.push(r.headers().authorization));
      await good.goto(`${base}#token=s3cret`);
      expectDuplicatesOnDistinctLanes(await timelineOf(good, FindingKind.DUPLICATE_TERMINAL));
      expect(good.url()).toBe(base);
      expect(sent[0]).toBeUndefined();
      expect(sent.slice(1)).toContain('Bearer s3cret');
      expect(await good.textContent('#updates')).toBe('');
      expect([...(await bare.refused()), ...(await wrong.refused())]).toEqual([]);
    },
  );
});

describe("a stateless server's listening-stream loop through the gateway, on its page in chromium", () => {
  // The lab's loops against a server without sessions (cline/cline#12119): no Mcp-Session-Id on any GET,
  // so the loop is the client's (its address). Its refused GETs draw on one lane, one after another.
  it.each([
    ['listening-stream-loop', /each answered 405/],
    ['listening-stream-loop-closed', /each closed at once with no event/],
  ] as const)(
    '%s: the refused GETs on one lane, and the sentence naming the client',
    { timeout: TIMEOUT },
    async (name, said) => {
      let gateway: RunningGateway | undefined;
      await runScenario(name, {
        serverUrl: 'http://127.0.0.1:9/mcp',
        loops: {
          front: async (serverUrl) => {
            gateway = await startGateway({
              upstream: serverUrl,
              port: 0,
              requestTimeoutMs: 10_000,
              detector: { config: { metricsPort: 0 }, output: null },
            });
            closers.push(() => gateway!.close());
            return { url: gatewayMcpUrl(gateway, serverUrl), close: () => Promise.resolve() };
          },
        },
      });
      await settleGateway(gateway!);
      await waitFor(
        () => gateway!.detector!.findings().some((f) => f.kind === FindingKind.LISTENING_STREAM_LOOP),
        'the listening_stream_loop',
      );
      const { page, refused } = await openPage(`http://127.0.0.1:${gateway!.detector!.metricsPort}${ROUTE_PAGE}`);
      await page.selectOption('#filter-kind', FindingKind.LISTENING_STREAM_LOOP);
      await page.focus('.finding');
      await page.keyboard.press('Enter');
      await page.waitForSelector('.lane');
      expect(await page.$$eval('.lane', (ls) => ls.map((l) => l.getAttribute('aria-label')))).toEqual([
        'listening stream opens',
      ]);
      const lefts = await page.$$eval('.ev.listening_refused', (es) =>
        es.map((e) => parseFloat((e as unknown as { style: { left: string } }).style.left)),
      );
      expect(lefts.length).toBeGreaterThan(DEFAULT_CONFIG.listeningLoopThreshold);
      // One after another along the axis, as they happened.
      expect([...lefts].sort((a, b) => a - b)).toEqual(lefts);
      const story = await page.textContent('.story');
      expect(story).toMatch(/^Client 127\.0\.0\.1 opened the listening stream of a server without sessions \d+ times /);
      expect(story).toMatch(said);
      expect(await refused()).toEqual([]);
    },
  );
});

// The callbacks of page.waitForFunction run in the browser; the DOM names they use, declared for them alone.
declare const document: { getElementById(id: string): { textContent: string | null } | null };
