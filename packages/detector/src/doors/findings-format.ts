import type { Finding } from '../core/types.js';

/** The findings of one (service, session, request), with the request's counts stated once. */
export interface FindingGroup {
  service: string;
  session_id: string;
  request_id: string;
  /** Trace ids of the group's findings, in order of first appearance. */
  trace_ids: string[];
  /**
   * Terminal deliveries beyond the first, and reattach/resume attempts: the latest (largest) count any
   * finding of the request carries. A finding reports the count at its detection (`duplicate_terminal`
   * at the first duplicate, `reconnect_storm` at the threshold), `signature` the whole storm's, so the
   * per-finding figures differ for one request; the request has one count.
   */
  duplicates: number | undefined;
  attempts: number | undefined;
  findings: Finding[];
}

/** Fields every finding has, shown in the group's header or on the finding's line, not as a fact. */
const IDENTITY = new Set([
  'kind',
  'service',
  'session_id',
  'request_id',
  'trace_id',
  'first_time_unix_ms',
  'last_time_unix_ms',
  'span_ids',
  'duplicates',
  'attempts',
  'record',
]);

/** Groups findings by (service, session, request), in order of each group's first finding. */
export function groupFindings(findings: readonly Finding[]): FindingGroup[] {
  const groups = new Map<string, FindingGroup>();
  for (const f of findings) {
    const key = `${f.service}\n${f.session_id}\n${f.request_id}`;
    let g = groups.get(key);
    if (!g) {
      g = {
        service: f.service,
        session_id: f.session_id,
        request_id: f.request_id,
        trace_ids: [],
        duplicates: undefined,
        attempts: undefined,
        findings: [],
      };
      groups.set(key, g);
    }
    g.findings.push(f);
    if (!g.trace_ids.includes(f.trace_id)) g.trace_ids.push(f.trace_id);
    if (f.duplicates !== undefined) g.duplicates = Math.max(g.duplicates ?? 0, f.duplicates);
    if (f.attempts !== undefined) g.attempts = Math.max(g.attempts ?? 0, f.attempts);
  }
  return [...groups.values()];
}

/** The request's counts in words, e.g. "3 duplicate terminal deliveries, 4 resume/reattach attempts". */
export function describeCounts(g: FindingGroup): string {
  const parts: string[] = [];
  if (g.duplicates !== undefined)
    parts.push(`${g.duplicates} duplicate terminal deliver${g.duplicates === 1 ? 'y' : 'ies'}`);
  if (g.attempts !== undefined) parts.push(`${g.attempts} resume/reattach attempt${g.attempts === 1 ? '' : 's'}`);
  return parts.join(', ');
}

/**
 * What a finding says beyond its kind, identity and the request's counts: every other field, whatever
 * its kind (so kinds and fields added to the core show without a change here), e.g. `ended_by_eviction=true status_code=404`.
 */
export function findingFacts(f: Finding): string {
  const facts: string[] = [];
  for (const [key, value] of Object.entries(f)) {
    if (IDENTITY.has(key) || value === undefined) continue;
    facts.push(`${key}=${typeof value === 'object' ? JSON.stringify(value) : String(value)}`);
  }
  return facts.join(' ');
}

export interface FindingFormatOptions {
  /** Prefix of every line. Default none. */
  indent?: string;
  /** Each finding's evidence time range. Default true. */
  times?: boolean;
}

/** One block per request: a header with its identity and counts, then one line per finding. */
export function formatFindingGroups(groups: readonly FindingGroup[], options: FindingFormatOptions = {}): string {
  const indent = options.indent ?? '';
  const out: string[] = [];
  for (const g of groups) {
    const counts = describeCounts(g);
    out.push(
      `${indent}service=${g.service} session=${g.session_id} request=${g.request_id} trace=${g.trace_ids.join(',')}${counts ? `: ${counts}` : ''}`,
    );
    for (const f of g.findings) {
      const facts = findingFacts(f);
      const at =
        options.times === false
          ? ''
          : ` ${new Date(f.first_time_unix_ms).toISOString()}..${new Date(f.last_time_unix_ms).toISOString()}`;
      // A record (how a storm ended, a retraction) is labelled with the kind of the finding it concerns.
      const label = f.record === undefined ? f.kind : `${f.kind}:${f.record}`;
      out.push(`${indent}  ${label.padEnd(24)}${at}${facts ? ` ${facts}` : ''}`.trimEnd());
    }
  }
  return out.join('\n');
}
