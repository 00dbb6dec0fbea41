/**
 * Detection lag under load: a spawned `resumewatch serve` takes a steady OTLP/JSON load of healthy
 * traffic on two keep-alive connections, while probes, one at a time, post the span that completes a
 * finding (a request's second terminal, marked duplicate: `duplicate_terminal`). Per probe:
 *   emitted  from the start of the probe's POST to its finding's line on serve's stdout
 *   metrics  from the start of the probe's POST to the first /metrics scrape that counts it
 * and, as the reference measured alongside, the POST's own round trip (start to HTTP 200).
 * The load is healthy traffic only, so every finding is a probe's.
 */
import { Agent, request } from 'node:http';
import * as S from '@resumewatch/semconv';
import { arg, figure, percentile, SMOKE } from '../../../bench/harness.js';
import type { SpanRecord } from '@resumewatch/detector';
import { otlpJson } from '../../detector/test/helpers/otlp.js';
import { otlpBodies, workload } from '../../detector/test/helpers/workload.js';
import { closePosts, post, startServe } from './serve-process.js';

const PROBES = arg('probes', 200, 3);
const PROBE_SERVICE = 'lag-probe';

// Healthy load: more distinct spans than the dedupe set remembers, so cycling the pool keeps them new.
const load = otlpBodies(workload(SMOKE ? 600 : 60_000, 'lag', Number.MAX_SAFE_INTEGER), 512);

const { proc: child, port, metricsPort } = await startServe(false);

// Findings on stdout: resolve the waiter of the probe whose session the line names.
const waiting = new Map<string, (at: bigint) => void>();
let out = '';
child.stdout!.on('data', (d: Buffer) => {
  const at = process.hrtime.bigint();
  out += d.toString();
  let nl: number;
  while ((nl = out.indexOf('\n')) >= 0) {
    const line = out.slice(0, nl);
    out = out.slice(nl + 1);
    const f = JSON.parse(line) as { kind: string; session_id: string };
    if (f.kind === S.FindingKind.DUPLICATE_TERMINAL) waiting.get(f.session_id)?.(at);
  }
});

const metricsAgent = new Agent({ keepAlive: true, maxSockets: 1 });
const counted = new RegExp(
  `^${S.METRIC_FINDINGS_TOTAL}\\{[^}]*${S.LABEL_KIND}="${S.FindingKind.DUPLICATE_TERMINAL}",${S.LABEL_SERVICE}="${PROBE_SERVICE}"[^}]*\\} (\\d+)`,
  'm',
);
function probeCount(): Promise<number> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port: metricsPort, path: '/metrics', agent: metricsAgent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve(Number(counted.exec(text)?.[1] ?? 0)));
    })
      .on('error', reject)
      .end();
  });
}

let loading = true;
let loadSpans = 0;
const loaders = [0, 1].map(async (k) => {
  for (let i = k; loading; i = (i + 2) % load.length) {
    await post(port, 'application/json', load[i]!);
    loadSpans += 512;
  }
});

/** Probe n: a request's terminal, then a second one marked duplicate (span ids no load span has). */
function probeBody(n: number): string {
  const [now, session] = [Date.now(), `lag-probe-${n}`];
  const terminal = (k: number, extra: object): SpanRecord => ({
    traceId: 'f'.repeat(32),
    spanId: (0xf0000000 + n * 2 + k).toString(16).padStart(16, '0'),
    name: S.SPAN_REQUEST_TERMINAL,
    kind: 1,
    startTimeUnixMs: now + 2 * k,
    endTimeUnixMs: now + 2 * k + 1,
    attributes: { [S.ATTR_MCP_SESSION_ID]: session, [S.ATTR_JSONRPC_REQUEST_ID]: 1, ...extra },
    service: PROBE_SERVICE,
  });
  const spans = [
    terminal(0, { [S.ATTR_MCP_STREAM_ID]: `${session}-a` }),
    terminal(1, { [S.ATTR_MCP_STREAM_ID]: `${session}-b`, [S.ATTR_MCP_TERMINAL_DUPLICATE]: true }),
  ];
  return JSON.stringify(otlpJson(spans, PROBE_SERVICE));
}

const ms = (a: bigint, b: bigint) => Number(b - a) / 1e6;
const emitted: number[] = [];
const scraped: number[] = [];
const roundTrip: number[] = [];
await new Promise((r) => setTimeout(r, SMOKE ? 50 : 1000)); // the load reaches a steady state
const loadStart = process.hrtime.bigint();
const loadAtStart = loadSpans;
for (let n = 0; n < PROBES; n++) {
  const body = probeBody(n);
  const session = `lag-probe-${n}`;
  const found = new Promise<bigint>((resolve) => waiting.set(session, resolve));
  let timer: NodeJS.Timeout | undefined;
  const finding = Promise.race([
    found,
    new Promise<bigint>(
      (_, reject) => (timer = setTimeout(() => reject(new Error(`probe ${n}: no finding in 10 s`)), 10_000)),
    ),
  ]);
  const start = process.hrtime.bigint();
  await post(port, 'application/json', body);
  roundTrip.push(ms(start, process.hrtime.bigint()));
  emitted.push(ms(start, await finding));
  clearTimeout(timer);
  waiting.delete(session);
  for (;;) {
    const c = await probeCount();
    if (c >= n + 1) break;
    if (ms(start, process.hrtime.bigint()) > 10_000) throw new Error(`probe ${n}: not in /metrics after 10 s`);
  }
  scraped.push(ms(start, process.hrtime.bigint()));
  await new Promise((r) => setTimeout(r, 10 + (n % 7) * 5));
}
const loadRate = (loadSpans - loadAtStart) / (Number(process.hrtime.bigint() - loadStart) / 1e9);
loading = false;
await Promise.all(loaders);
closePosts();
metricsAgent.destroy();
child.kill('SIGTERM');

const note = `${PROBES} probes; load ${Math.round(loadRate)} spans/s of healthy OTLP/JSON on 2 connections`;
for (const p of [50, 99]) {
  const reference = { what: `the probe's POST round trip, p${p}`, value: percentile(roundTrip, p / 100), unit: 'ms' };
  for (const [to, xs] of [
    ['emitted', emitted],
    ['counted in /metrics', scraped],
  ] as const)
    figure({
      id: `lag-p${p}-${to === 'emitted' ? 'emitted' : 'metrics'}`,
      what: `detection lag p${p}: completing span posted → finding ${to}`,
      reference,
      ours: { value: percentile(xs, p / 100), unit: 'ms' },
      note,
    });
}
