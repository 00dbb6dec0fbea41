import { TimelineMark } from '@resumewatch/semconv';
import type { PageData } from './page-data.js';
import { PAGE_CSS } from './page-style.js';
import { PAGE_SCRIPT } from './page-script.js';
import { REPORT_POLICY } from './page-policy.js';

export interface PageOptions {
  title: string;
  /** Where a live page fetches fresh data (ROUTE_PAGE_DATA); undefined: a report, the data never changes. */
  dataPath?: string;
  /** Where a live page fetches an opened finding's timeline (ROUTE_PAGE_TIMELINE); undefined: they are in the data. */
  timelinePath?: string;
  refreshMs?: number;
  /**
   * Where the Content-Security-Policy is: 'meta', a tag in the page (a report: a file has no headers);
   * 'header', sent by the server with the page (page-policy.ts), and then no tag.
   */
  policy?: 'meta' | 'header';
}

/**
 * JSON that can sit in a <script> block: `<`, `>` and `&` escaped (no `</script>` or `<!--` can end or
 * change the block), and the two line separators JavaScript once did not allow in strings.
 */
export function scriptJson(value: unknown): string {
  return scriptJsonOf(JSON.stringify(value));
}

/** scriptJson of JSON text already made (the live page's data, made once for both routes). */
function scriptJsonOf(json: string): string {
  return json
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * The page: one self-contained HTML document (inline style and script, the data inline as JSON; nothing
 * fetched but the live page's own data path). Served at ROUTE_PAGE and written by `analyze --html`.
 * Without data (null): the page a detector with --token answers without it, which fetches its data
 * with the token it is given (page-script.ts).
 */
export function renderPage(data: PageData | null, options: PageOptions): string {
  return renderPageOfJson(JSON.stringify(data), options);
}

/** renderPage of the data's JSON text. */
export function renderPageOfJson(json: string, options: PageOptions): string {
  const config = {
    title: options.title,
    dataPath: options.dataPath ?? null,
    timelinePath: options.timelinePath ?? null,
    refreshMs: options.refreshMs ?? 2000,
    marks: Object.values(TimelineMark),
  };
  // The style and script blocks are exactly PAGE_CSS and PAGE_SCRIPT: the policy allows them by their hash.
  const meta =
    (options.policy ?? 'meta') === 'meta'
      ? `<meta http-equiv="Content-Security-Policy" content="${REPORT_POLICY}">\n`
      : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
${meta}<title>${escapeHtml(options.title)}</title>
<style>${PAGE_CSS}</style>
</head>
<body>
<header id="head"><h1>${escapeHtml(options.title)}</h1></header>
<main>
<section aria-labelledby="findings-title">
<h2 id="findings-title">Findings, newest first</h2>
<div class="filters" id="filters"></div>
<p id="updates" class="note" aria-live="polite"></p>
<ol class="findings" id="findings"></ol>
</section>
<section id="detail" tabindex="-1" aria-live="polite" aria-label="the chosen finding and its request"></section>
</main>
<noscript><p>The page draws with JavaScript; the data is in the page source as JSON.</p></noscript>
<script type="application/json" id="page-data">${scriptJsonOf(json)}</script>
<script type="application/json" id="page-config">${scriptJson(config)}</script>
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`;
}
