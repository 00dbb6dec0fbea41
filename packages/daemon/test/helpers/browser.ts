import { TimelineMark } from '@resumewatch/semconv';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';

/** For tests of other packages, which reach playwright-core through this helper. */
export type { Browser, Page };
import { requireTools } from '../../../../test/helpers/required-tools.js';

/** Debian's chromium, driven by playwright-core (Playwright's own browser download cannot work here). */
export async function launchChromium(): Promise<Browser> {
  requireTools('chromium');
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-background-networking'],
  });
}

// The callbacks of page.$$eval run in the browser; the few DOM names they use, declared for them alone.
interface Styled {
  parentElement: Styled | null;
}
declare function getComputedStyle(element: Styled): { color: string; backgroundColor: string };
declare const document: { querySelectorAll(selector: string): ArrayLike<Styled> };

/**
 * The WCAG contrast ratio of the text of every element matching `selector` against the first opaque
 * background behind it (the lowest of them), computed from the page's own styles. The query runs in the
 * same evaluation as the styles: the live page redraws on its own, and an element it replaced between a
 * query and a later evaluation has no computed style (NaN).
 */
export async function lowestContrast(page: Page, selector: string): Promise<number> {
  return page.evaluate((selector) => {
    const elements = Array.from(document.querySelectorAll(selector));
    if (elements.length === 0) return NaN;
    const rgb = (text: string): number[] => (text.match(/[\d.]+/g) ?? []).map(Number);
    const luminance = ([r, g, b]: number[]): number => {
      const c = [r!, g!, b!].map((v) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * c[0]! + 0.7152 * c[1]! + 0.0722 * c[2]!;
    };
    const background = (el: Styled | null): number[] => {
      for (let e = el; e; e = e.parentElement) {
        const bg = rgb(getComputedStyle(e).backgroundColor);
        if (bg.length === 3 || (bg.length === 4 && bg[3]! > 0)) return bg;
      }
      return [255, 255, 255];
    };
    let lowest = Infinity;
    for (const el of elements) {
      const fg = luminance(rgb(getComputedStyle(el).color));
      const bg = luminance(background(el));
      lowest = Math.min(lowest, (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05));
    }
    return lowest;
  }, selector);
}

// The dataset of an element, in the callbacks of page.$$eval.
type Dataset = { dataset: Record<string, string | undefined> };

/** Chooses the first finding of `kind` with the keyboard and returns the lanes of its timeline. */
export async function timelineOf(page: Page, kind: string): Promise<{ lane: string; marks: string[] }[]> {
  await page.selectOption('#filter-kind', kind);
  await page.focus('.finding');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.lane');
  return page.$$eval('.lane', (lanes) =>
    lanes.map((l) => ({
      lane: l.getAttribute('aria-label') ?? '',
      marks: [...l.querySelectorAll('.ev.terminal')].map((e) => (e as unknown as Dataset).dataset.mark ?? ''),
    })),
  );
}

export function expectDuplicatesOnDistinctLanes(lanes: { lane: string; marks: string[] }[]): void {
  const duplicateLanes = lanes.filter((l) => l.marks.includes(TimelineMark.DUPLICATE)).map((l) => l.lane);
  const liveLanes = lanes.filter((l) => l.marks.includes(TimelineMark.LIVE)).map((l) => l.lane);
  expect(new Set(duplicateLanes).size).toBeGreaterThanOrEqual(2);
  expect(duplicateLanes.length).toBe(new Set(duplicateLanes).size);
  expect(liveLanes).toHaveLength(1);
  expect(duplicateLanes).not.toContain(liveLanes[0]);
}

// The init script runs in the browser; the few names it uses, declared for it alone.
declare const window: { policyViolations?: string[] };
declare function addEventListener(
  type: string,
  listener: (e: { violatedDirective: string; blockedURI: string }) => void,
): void;

/**
 * Records what the page's Content-Security-Policy refuses, from before the page's own script runs: every
 * `securitypolicyviolation` event, every console error that names the policy and every uncaught error. Returns a function that reads them.
 */
export async function watchPolicy(page: Page): Promise<() => Promise<string[]>> {
  const errors: string[] = [];
  page.on('console', (m) => {
    // Chromium says each refusal on the console too; a 401 the page expects (no token) is also an error there.
    if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
  await page.addInitScript(() => {
    window.policyViolations = [];
    addEventListener('securitypolicyviolation', (e) =>
      window.policyViolations!.push(`violation: ${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  return async () => [...errors, ...(await page.evaluate(() => window.policyViolations ?? []))];
}
