import { TerminalDelivery } from './values.js';
import type { ValuesOf } from './types.js';

/**
 * How the page of `resumewatch serve` marks a terminal on a request's timeline: what was wrong with it,
 * the worst first, else how it was delivered (TerminalDelivery: on the request's own stream, or on a
 * resumed one). Not a span attribute value: the page's own words, kept apart from the value sets.
 */
export const TimelineMark = {
  LIVE: TerminalDelivery.LIVE,
  REPLAY: TerminalDelivery.REPLAY,
  DUPLICATE: 'duplicate',
  CONFLICTING: 'conflicting',
  FOREIGN: 'foreign',
} as const;
export type TimelineMark = ValuesOf<typeof TimelineMark>;
