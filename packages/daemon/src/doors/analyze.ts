import { readFile } from 'node:fs/promises';
import { drawable, type Evidence } from '../page/evidence.js';
import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_SESSION_ID,
  SPAN_REQUEST_TERMINAL,
  SPAN_SESSION_REATTACH,
  SPAN_STREAM_RESUME,
  SpanReceivedResult,
} from '@resumewatch/semconv';
import {
  Detector,
  type DetectorEvents,
  type DetectorOptions,
  type DetectorStats,
  type Finding,
  type SpanRecord,
  OtlpDecodeError,
  decodeJsonRequest,
  formatFindingGroups,
  groupFindings,
} from '@resumewatch/detector';

/** Bad input: names the file and, when it is known, the line. */
export class AnalyzeInputError extends Error {
  override readonly name = 'AnalyzeInputError';
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    reason: string,
  ) {
    super(`${file}${line === undefined ? '' : `:${line}`}: ${reason}`);
  }
}

export interface AnalyzeResult {
  findings: Finding[];
  /** Spans decoded from the input, malformed ones included. */
  spans: number;
  /** Spans with a malformed id or time (skipped by the decoder or the detector). */
  invalidSpans: number;
  /** Spans whose span id had been read before: redeliveries (an exporter's retry, a file read twice), counted once. */
  duplicateSpans: number;
  /** Spans the detector has no use for, by reason. */
  ignoredSpans: Record<string, number>;
  /** JSON documents (lines) that held no resource spans, e.g. metrics or logs of a Collector file exporter. */
  documentsWithoutSpans: number;
  /** The detector's counts at the end of the input. */
  detectorStats: DetectorStats;
}

/** What analyze can also feed while it reads (the HTML report's evidence and counts). */
export interface AnalyzeObservers {
  /** Gets every span the detector accepted and every finding: the report's timelines. */
  evidence?: Evidence;
  /** Gets the detector's per-span events (counts by era, for the report's header). */
  events?: DetectorEvents;
}

/** Why the detector ignored a span, in words. */
function ignoredReason(s: SpanRecord): string {
  const contract =
    s.name === SPAN_REQUEST_TERMINAL || s.name === SPAN_STREAM_RESUME || s.name === SPAN_SESSION_REATTACH;
  if (!contract) return 'not an MCP span';
  if (typeof s.attributes[ATTR_MCP_SESSION_ID] !== 'string' || s.attributes[ATTR_MCP_SESSION_ID] === '')
    return `no ${ATTR_MCP_SESSION_ID}`;
  if (s.attributes[ATTR_JSONRPC_REQUEST_ID] === undefined) return `no ${ATTR_JSONRPC_REQUEST_ID}`;
  return 'other';
}

/**
 * Runs the detector over recorded OTLP/JSON: one ExportTraceServiceRequest per line (as the Collector's
 * file exporter writes) or one JSON document per file. Time is the spans' own: the detector advances to
 * the latest span end after every request and everything still open is reported at the end.
 */
export async function analyzeFiles(
  paths: readonly string[],
  options: Partial<DetectorOptions> = {},
  readStdin: () => Promise<string> = readAllStdin,
  observers: AnalyzeObservers = {},
): Promise<AnalyzeResult> {
  const findings: Finding[] = [];
  const { evidence, events } = observers;
  const detector = new Detector({
    ...options,
    ...(events ? { events } : {}),
    onFinding: (f) => {
      evidence?.reported(f);
      findings.push(f);
    },
  });
  const result: Omit<AnalyzeResult, 'detectorStats'> = {
    findings,
    spans: 0,
    invalidSpans: 0,
    duplicateSpans: 0,
    ignoredSpans: {},
    documentsWithoutSpans: 0,
  };
  let latest = -Infinity;
  const sink = (s: SpanRecord): void => {
    if (s.endTimeUnixMs > latest) latest = s.endTimeUnixMs;
    const r = detector.ingest(s);
    if (drawable(r)) evidence?.observe(s);
    if (r === SpanReceivedResult.DUPLICATE) result.duplicateSpans++;
    else if (r === SpanReceivedResult.INVALID) result.invalidSpans++;
    else if (r === SpanReceivedResult.IGNORED) {
      const why = ignoredReason(s);
      result.ignoredSpans[why] = (result.ignoredSpans[why] ?? 0) + 1;
    }
  };
  for (const path of paths) {
    const name = path === '-' ? '<stdin>' : path;
    let text: string;
    try {
      text = path === '-' ? await readStdin() : await readFile(path, 'utf8');
    } catch (e) {
      throw new AnalyzeInputError(name, undefined, `cannot read: ${(e as Error).message}`);
    }
    let resourceSpans = 0;
    for (const doc of documents(text, name)) {
      if (typeof doc.value !== 'object' || doc.value === null || Array.isArray(doc.value)) {
        throw new AnalyzeInputError(
          name,
          doc.line,
          'not an OTLP/JSON export request (expected a JSON object with resourceSpans)',
        );
      }
      let n: number;
      try {
        // The decoder reads snake_case (proto) field names as well as lowerCamelCase ones.
        const r = decodeJsonRequest(doc.text, sink, { detectorAttributesOnly: true });
        result.spans += r.spans + r.invalid;
        result.invalidSpans += r.invalid;
        n = r.resourceSpans ?? 0;
      } catch (e) {
        if (e instanceof OtlpDecodeError) throw new AnalyzeInputError(name, doc.line, e.message);
        throw e;
      }
      if (n === 0) result.documentsWithoutSpans++;
      resourceSpans += n;
      detector.advance(latest);
    }
    // An all-clear needs something to be clear of: input without a single ResourceSpans is the wrong input.
    if (resourceSpans === 0) {
      throw new AnalyzeInputError(
        name,
        undefined,
        'no OTLP resource spans (expected OTLP/JSON export requests: {"resourceSpans": [...]}, one a line or one document)',
      );
    }
  }
  detector.flush();
  return { ...result, detectorStats: detector.stats() };
}

function* documents(text: string, name: string): Generator<{ value: unknown; text: string; line: number | undefined }> {
  const lines = text.split('\n');
  let seen = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      if (seen === 0) {
        // Not JSON lines: perhaps one (pretty-printed) document.
        try {
          value = JSON.parse(text);
        } catch {
          throw new AnalyzeInputError(name, i + 1, `malformed JSON: ${(e as Error).message}`);
        }
        yield { value, text, line: undefined };
        return;
      }
      throw new AnalyzeInputError(name, i + 1, `malformed JSON: ${(e as Error).message}`);
    }
    seen++;
    yield { value, text: line, line: i + 1 };
  }
  if (seen === 0) throw new AnalyzeInputError(name, undefined, 'no OTLP export request in the input');
}

async function readAllStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** A readable report: the findings grouped by (service, session, request), then what was read and what was left out. */
export function formatSummary(result: AnalyzeResult): string {
  const out: string[] = [];
  const groups = groupFindings(result.findings);
  if (groups.length > 0) out.push(formatFindingGroups(groups), '');
  const used =
    result.spans -
    result.invalidSpans -
    result.duplicateSpans -
    Object.values(result.ignoredSpans).reduce((a, b) => a + b, 0);
  const ignored = Object.entries(result.ignoredSpans);
  const ignoredTotal = ignored.reduce((a, [, n]) => a + n, 0);
  out.push(
    `${result.spans} span(s) read: ${used} used, ${result.duplicateSpans} duplicate(s) (redelivered span ids, counted once), ` +
      `${ignoredTotal} ignored${ignored.length ? ` (${ignored.map(([why, n]) => `${n} ${why}`).join(', ')})` : ''}, ${result.invalidSpans} malformed.`,
  );
  if (result.documentsWithoutSpans > 0)
    out.push(`${result.documentsWithoutSpans} document(s) without resource spans skipped.`);
  // Records (how a storm ended, a retraction) concern a finding; they are counted apart from findings.
  const byKind = new Map<string, number>();
  const byRecord = new Map<string, number>();
  for (const f of result.findings) {
    const counts = f.record === undefined ? byKind : byRecord;
    const label = f.record === undefined ? f.kind : `${f.kind}:${f.record}`;
    counts.set(label, (counts.get(label) ?? 0) + 1);
  }
  const findings = [...byKind.values()].reduce((a, b) => a + b, 0);
  if (findings === 0) out.push('No finding.');
  else
    out.push(
      `${findings} finding(s) on ${groups.length} request(s): ` +
        [...byKind].map(([k, n]) => `${k} ${n}`).join(', ') +
        '.',
    );
  if (byRecord.size > 0) out.push('Records about them: ' + [...byRecord].map(([k, n]) => `${k} ${n}`).join(', ') + '.');
  return out.join('\n') + '\n';
}
