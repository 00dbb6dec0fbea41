import { createHash } from 'node:crypto';
import { PAGE_CSS } from './page-style.js';
import { PAGE_SCRIPT } from './page-script.js';

/** The CSP source of an inline block: the base64 SHA-256 of its text, exactly as it sits between its tags. */
function hashSource(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

/**
 * What the page may do: run its own script and style (by hash, computed once from the very text
 * render-html.ts puts between the tags, so nothing injected into the page can run or restyle it) and
 * nothing else; no other origin, no <base>, no form, no plugin.
 */
const COMMON = [
  "default-src 'none'",
  `script-src ${hashSource(PAGE_SCRIPT)}`,
  `style-src ${hashSource(PAGE_CSS)}`,
  "base-uri 'none'",
  "form-action 'none'",
];

/**
 * The served page's policy, sent as a header: it also fetches its data from its own origin, and no
 * other site may frame it (frame-ancestors works only in a header).
 */
const SERVED_PAGE_POLICY = [...COMMON, "connect-src 'self'", "frame-ancestors 'none'"].join('; ');

/** The policy of a report (`analyze --html`), in its meta tag: a file has no headers, and fetches nothing. */
export const REPORT_POLICY = COMMON.join('; ');

/** The headers of the page and its data: the policy, not cached, not framed, not sniffed, no referrer sent. */
export const PAGE_HEADERS = {
  'content-security-policy': SERVED_PAGE_POLICY,
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};
