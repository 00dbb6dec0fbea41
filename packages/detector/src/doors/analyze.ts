import { readFile } from 'node:fs/promises';
import { Detector } from '../core/detector.js';
import type { DetectorOptions } from '../core/options.js';
import type { Finding, SpanRecord } from '../core/types.js';
import { OtlpDecodeError } from '../otlp/errors.js';
import { decodeJsonRequest } from '../otlp/json.js';

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
  spans: number;
  invalidSpans: number;
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
): Promise<AnalyzeResult> {
  const findings: Finding[] = [];
  const detector = new Detector({ ...options, onFinding: (f) => findings.push(f) });
  const result: AnalyzeResult = { findings, spans: 0, invalidSpans: 0 };
  let latest = -Infinity;
  const sink = (s: SpanRecord): void => {
    if (s.endTimeUnixMs > latest) latest = s.endTimeUnixMs;
    detector.ingest(s);
  };
  for (const path of paths) {
    const name = path === '-' ? '<stdin>' : path;
    let text: string;
    try {
      text = path === '-' ? await readStdin() : await readFile(path, 'utf8');
    } catch (e) {
      throw new AnalyzeInputError(name, undefined, `cannot read: ${(e as Error).message}`);
    }
    for (const doc of documents(text, name)) {
      try {
        const r = decodeJsonRequest(doc.value, sink, { detectorAttributesOnly: true });
        result.spans += r.spans;
        result.invalidSpans += r.invalid;
      } catch (e) {
        if (e instanceof OtlpDecodeError) throw new AnalyzeInputError(name, doc.line, e.message);
        throw e;
      }
      detector.advance(latest);
    }
  }
  detector.flush();
  return result;
}

function* documents(text: string, name: string): Generator<{ value: unknown; line: number | undefined }> {
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
        yield { value, line: undefined };
        return;
      }
      throw new AnalyzeInputError(name, i + 1, `malformed JSON: ${(e as Error).message}`);
    }
    seen++;
    yield { value, line: i + 1 };
  }
  if (seen === 0) throw new AnalyzeInputError(name, undefined, 'no OTLP export request in the input');
}

async function readAllStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** A readable report: one line per finding or record (`kind:record`), then a count by kind. */
export function formatSummary(result: AnalyzeResult): string {
  const out: string[] = [];
  const byKind = new Map<string, number>();
  const byRecord = new Map<string, number>();
  let findings = 0;
  for (const f of result.findings) {
    const label = f.record === undefined ? f.kind : `${f.kind}:${f.record}`;
    const counts = f.record === undefined ? byKind : byRecord;
    counts.set(label, (counts.get(label) ?? 0) + 1);
    if (f.record === undefined) findings++;
    const details = [
      f.duplicates !== undefined ? `duplicates=${f.duplicates}` : '',
      f.attempts !== undefined ? `attempts=${f.attempts}` : '',
      f.ended_by !== undefined ? `ended_by=${f.ended_by}` : '',
      f.server !== undefined ? `server=${f.server}` : '',
      f.status_code !== undefined ? `status=${f.status_code}` : '',
    ].filter(Boolean);
    out.push(
      `${label.padEnd(22)} service=${f.service} session=${f.session_id} request=${f.request_id} trace=${f.trace_id} ` +
        `at=${new Date(f.first_time_unix_ms).toISOString()}..${new Date(f.last_time_unix_ms).toISOString()}` +
        (details.length ? ' ' + details.join(' ') : ''),
    );
  }
  out.push('');
  out.push(`${result.spans} span(s) read${result.invalidSpans ? `, ${result.invalidSpans} malformed span(s) skipped` : ''}.`);
  if (findings === 0) out.push('No finding.');
  else out.push(`${findings} finding(s): ` + [...byKind].map(([k, n]) => `${k} ${n}`).join(', ') + '.');
  if (byRecord.size > 0) out.push(`Records about them: ` + [...byRecord].map(([k, n]) => `${k} ${n}`).join(', ') + '.');
  return out.join('\n') + '\n';
}
