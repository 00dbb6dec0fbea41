// End to end, without Docker: a real Prometheus (Debian's binary) scrapes real detectors
// (`resumewatch serve`) fed by the lab's scenarios running against lab MCP servers through the real
// instrumentation (`instrumentFetch`), whose spans the real OpenTelemetry SDK exports over OTLP/HTTP;
// the shipped rules (with short `for:`) must raise each alert the scenarios call for, and every query
// of every dashboard panel must return data.
//
// Traffic (test/helpers/traffic.ts): seed-loop, server-restart, cursor-evicted and resume-loses-result,
// each under its own service.name, and healthy load under another one, all back to back until the end.
// Detectors: `main` gets all traffic; `idle` gets none (ResumewatchDetectorNoSpans); `capped` gets all
// traffic with a cap of 2 request states (ResumewatchDetectorEvictingState) plus synthetic malformed
// spans (ResumewatchDetectorRejectingSpans); a fourth target has nothing listening
// (ResumewatchDetectorDown). `main` also gets, every second, the synthetic spans of a client of two
// defective servers (McpServerForeignReplay, McpServerConflictingTerminal) with a retracted empty
// replay (which must not raise McpAmbiguousEmptyReplay) and a listening-stream resume, and two calls of
// the 2026-07-28 era re-issued after a broken stream (McpDuplicateExecution: the server's span says it
// completed the first attempt; McpPossibleDuplicateExecution: no span says), and the spans of an
// instrumented MCP server with a failing and a slow tool (McpServerErrorRatioHigh, McpServerLatencyHigh,
// and the MCP server dashboard's panels); and the spans of MCP tasks of both shapes (test/helpers/task-traffic.ts:
// healthy tasks, a duplicate task and a possible one, a lost task result, a poll storm); and the client loops
// (test/helpers/loop-traffic.ts: a dead session kept, GETs re-opened after 405s).
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { refusedPort } from '@resumewatch/lab';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRules, parseYaml, repoRoot, semconv, stringifyYaml } from './helpers/promql.js';
import { DefectiveServer, LabTraffic, Service, invalidSpansBody, serverDefectSpansBody } from './helpers/traffic.js';
import { config, runbookUrl } from '../dashboards/src/config.js';
import { overviewQueries } from '../dashboards/src/queries.js';
import { requireTools } from './helpers/required-tools.js';
import { MCP_SERVER_SERVICE, mcpServerSpansBody } from './helpers/mcp-server-traffic.js';
import { TASK_CLIENT, TASK_SERVER, taskSpansBody } from './helpers/task-traffic.js';
import { LOOP_CLIENT, loopSpansBody } from './helpers/loop-traffic.js';
import { freePort, waitFor as waitUntil } from './helpers/wait.js';

// The job the generated rules select (dashboards/src/config.ts); this test's Prometheus scrapes under it.
const JOB = jobOf(config.detectorSelector);

function jobOf(selector: string): string {
  const job = /^job="([^"]+)"$/.exec(selector)?.[1];
  if (job === undefined) throw new Error(`detectorSelector is not a single job matcher: ${selector}`);
  return job;
}
const HOST = '127.0.0.1';
const cliPath = join(repoRoot, 'packages/daemon/dist/cli.js');

interface Proc {
  name: string;
  child: ChildProcess;
  log: string[];
  /** Settles once the process has exited and its output is all in `log`. */
  closed: Promise<void>;
}
const procs: Proc[] = [];
let tmp = '';
let traffic: LabTraffic | undefined;
let pump: NodeJS.Timeout | undefined;
let promUrl = '';
const ports: Record<'main' | 'idle' | 'capped' | 'dead', { otlp: number; metrics: number }> = {} as never;

// Should the worker exit without afterAll (a crash), take the spawned processes with it.
const killAll = (): void => {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
};
process.once('exit', killAll);

function start(name: string, cmd: string, args: string[]): Proc {
  const child = spawn(cmd, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env } });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const p: Proc = { name, child, log: [], closed };
  const keep = (b: Buffer): void => {
    p.log.push(b.toString());
    if (p.log.length > 200) p.log.shift();
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  procs.push(p);
  return p;
}

async function stop(p: Proc): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => p.child.once('exit', () => resolve()));
  p.child.kill('SIGTERM');
  const timer = setTimeout(() => p.child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}

/** waitFor (helpers/wait.ts) on an async probe; on a timeout, the error also shows the processes' logs. */
async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs = 250,
): Promise<T> {
  try {
    return await waitUntil(fn, what, timeoutMs, everyMs);
  } catch (error) {
    const logs = procs.map((p) => `--- ${p.name}\n${p.log.join('').slice(-2000)}`).join('\n');
    const runs = traffic ? `\n--- traffic\n${JSON.stringify(traffic.stats())}` : '';
    throw new Error(`${(error as Error).message}${runs}\n${logs}`, { cause: error });
  }
}

/**
 * Prometheus cannot listen on port 0 and name its port, so it gets a port probed free; another test file's
 * listener can take that port before Prometheus binds it. Prometheus then exits ("address already in use"),
 * and it is started again on another port, at most three times.
 */
async function startPrometheus(): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const promPort = await freePort();
    promUrl = `http://${HOST}:${promPort}`;
    const prom = start('prometheus', 'prometheus', [
      `--config.file=${join(tmp, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(tmp, 'data')}`,
      `--web.listen-address=${HOST}:${promPort}`,
      '--enable-feature=exemplar-storage',
      '--log.level=warn',
    ]);
    const state = await waitFor(
      'Prometheus ready',
      async () => {
        if (prom.child.exitCode !== null || prom.child.signalCode !== null) return 'exited';
        return (await fetch(`${promUrl}/-/ready`, { signal: AbortSignal.timeout(2000) })).ok ? 'ready' : undefined;
      },
      30_000,
    );
    if (state === 'ready') return;
    await prom.closed;
    const lost = /address already in use/.test(prom.log.join(''));
    if (!lost || attempt === 3) throw new Error(`Prometheus exited:\n${prom.log.join('').slice(-2000)}`);
    procs.splice(procs.indexOf(prom), 1);
  }
}

/** The ports a `serve` banner names ("OTLP/HTTP on http://host:P/v1/traces, metrics on http://host:M/metrics"). */
const BANNER = /OTLP\/HTTP on http:\/\/[^:]+:(\d+)\/v1\/traces, metrics on http:\/\/[^:]+:(\d+)\/metrics/;

async function startDetector(name: keyof typeof ports, extra: string[] = []): Promise<void> {
  // Port 0 and the banner's ports: a port probed free and then passed on can be taken meanwhile by another
  // test file's listener (the race that once failed this suite with "port … is in use").
  const flags = [
    '--host',
    HOST,
    '--port',
    '0',
    '--grpc-port',
    'off',
    '--metrics-port',
    '0',
    '--storm-window',
    '3s',
    '--settle',
    '0',
    // The synthetic re-issue without a fate is reported as possible_duplicate_execution within seconds.
    '--reissue-settle',
    '1s',
    ...extra,
  ];
  if (!existsSync(cliPath)) throw new Error(`${cliPath} is missing: build the workspace first (pnpm build)`);
  const proc = start(`detector-${name}`, process.execPath, [cliPath, 'serve', ...flags]);
  const [otlp, metrics] = await waitFor(
    `detector ${name}'s banner`,
    async () => {
      const m = BANNER.exec(proc.log.join(''));
      return m ? [Number(m[1]), Number(m[2])] : undefined;
    },
    20_000,
  );
  ports[name] = { otlp: otlp!, metrics: metrics! };
  await waitFor(
    `detector ${name} /metrics`,
    async () => ((await fetch(`http://${HOST}:${metrics}/metrics`)).ok ? true : undefined),
    20_000,
  );
}

async function prom(path: string): Promise<{ status: string; data: unknown }> {
  const r = await fetch(`${promUrl}${path}`);
  return (await r.json()) as { status: string; data: unknown };
}

interface ActiveAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
}

beforeAll(async () => {
  requireTools('prometheus');
  tmp = mkdtempSync(join(tmpdir(), 'resumewatch-e2e-'));
  await startDetector('main');
  await startDetector('idle');
  await startDetector('capped', ['--max-requests', '2']);
  ports.dead = { otlp: 0, metrics: await refusedPort() };

  // The shipped rules, with short `for:` so that the test does not wait minutes.
  const rulesDir = join(tmp, 'rules');
  mkdirSync(rulesDir);
  for (const f of readdirSync(join(repoRoot, 'alerts/rules')).filter((x) => x.endsWith('.yaml'))) {
    const doc = parseYaml(readFileSync(join(repoRoot, 'alerts/rules', f), 'utf8')) as {
      groups: { rules: { for?: string }[] }[];
    };
    for (const g of doc.groups) for (const r of g.rules) if (r.for) r.for = '2s';
    writeFileSync(join(rulesDir, f), stringifyYaml(doc));
  }
  const target = (p: { metrics: number }): string => `${HOST}:${p.metrics}`;
  writeFileSync(
    join(tmp, 'prometheus.yml'),
    stringifyYaml({
      global: { scrape_interval: '1s', evaluation_interval: '1s', scrape_timeout: '900ms' },
      rule_files: [join(rulesDir, '*.yaml')],
      scrape_configs: [
        {
          job_name: JOB,
          static_configs: [
            { targets: [target(ports.main), target(ports.idle), target(ports.capped), target(ports.dead)] },
          ],
        },
      ],
    }),
  );
  await startPrometheus();

  // Traffic: the lab's scenarios back to back for the whole test, so that the counters keep moving;
  // malformed spans to the capped detector every second alongside.
  traffic = await LabTraffic.start({
    endpoints: [`http://${HOST}:${ports.main.otlp}/v1/traces`, `http://${HOST}:${ports.capped.otlp}/v1/traces`],
  });
  let round = 0;
  const tick = (): void => {
    void fetch(`http://${HOST}:${ports.capped.otlp}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: invalidSpansBody(20),
    }).catch(() => undefined);
    void fetch(`http://${HOST}:${ports.main.otlp}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: serverDefectSpansBody(round),
    }).catch(() => undefined);
    void fetch(`http://${HOST}:${ports.main.otlp}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: taskSpansBody(round),
    }).catch(() => undefined);
    void fetch(`http://${HOST}:${ports.main.otlp}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: loopSpansBody(round),
    }).catch(() => undefined);
    void fetch(`http://${HOST}:${ports.main.otlp}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: mcpServerSpansBody(round++),
    }).catch(() => undefined);
  };
  tick();
  pump = setInterval(tick, 1000);
}, 120_000);

afterAll(async () => {
  if (pump) clearInterval(pump);
  try {
    await traffic?.stop();
  } finally {
    await Promise.allSettled(procs.map(stop));
    process.removeListener('exit', killAll);
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}, 90_000);

describe('alerts and dashboards against a real Prometheus and real detectors', () => {
  const inst = (name: keyof typeof ports): string => `${HOST}:${ports[name].metrics}`;

  it('raises every alert the traffic calls for, with its labels and annotations', async () => {
    const expected: [string, Record<string, string>][] = [
      ['McpDuplicateTerminalDelivered', { service: Service.SEED_LOOP, severity: 'critical' }],
      [
        'McpResumeLoopSignature',
        { service: Service.SEED_LOOP, kind: semconv.FindingKind.SIGNATURE, severity: 'critical' },
      ],
      ['McpReconnectStorm', { service: Service.SEED_LOOP, severity: 'warning' }],
      ['McpResumeAfterTerminal', { service: Service.SEED_LOOP, severity: 'warning' }],
      ['McpAmbiguousEmptyReplay', { service: Service.SERVER_RESTART, severity: 'warning' }],
      ['McpResumeCursorLost', { service: Service.CURSOR_EVICTED, severity: 'warning' }],
      ['McpResultsLost', { service: Service.LOST_RESULT, severity: 'warning' }],
      [
        'McpServerConflictingTerminal',
        { server: DefectiveServer.CONFLICT, kind: semconv.FindingKind.CONFLICTING_TERMINAL, severity: 'critical' },
      ],
      [
        'McpServerForeignReplay',
        { server: DefectiveServer.FOREIGN, kind: semconv.FindingKind.FOREIGN_REPLAY, severity: 'warning' },
      ],
      [
        'McpDuplicateExecution',
        { service: Service.SERVER_DEFECTS, kind: semconv.FindingKind.DUPLICATE_EXECUTION, severity: 'critical' },
      ],
      [
        'McpPossibleDuplicateExecution',
        {
          service: Service.SERVER_DEFECTS,
          kind: semconv.FindingKind.POSSIBLE_DUPLICATE_EXECUTION,
          severity: 'warning',
        },
      ],
      ['McpDuplicateTask', { service: TASK_CLIENT, kind: semconv.FindingKind.DUPLICATE_TASK, severity: 'critical' }],
      [
        'McpPossibleDuplicateTask',
        { service: TASK_CLIENT, kind: semconv.FindingKind.POSSIBLE_DUPLICATE_TASK, severity: 'warning' },
      ],
      ['McpTaskResultLost', { service: TASK_CLIENT, kind: semconv.FindingKind.LOST_TASK_RESULT, severity: 'warning' }],
      ['McpTaskPollStorm', { service: TASK_CLIENT, kind: semconv.FindingKind.TASK_POLL_STORM, severity: 'warning' }],
      [
        'McpDeadSessionLoop',
        { service: LOOP_CLIENT, kind: semconv.FindingKind.DEAD_SESSION_LOOP, severity: 'warning' },
      ],
      [
        'McpListeningStreamLoop',
        { service: LOOP_CLIENT, kind: semconv.FindingKind.LISTENING_STREAM_LOOP, severity: 'warning' },
      ],
      // The re-issued task calls are the tasks family's alone: no (possible) duplicate execution for them.
      ['McpServerErrorRatioHigh', { service: MCP_SERVER_SERVICE, severity: 'critical' }],
      [
        'McpServerLatencyHigh',
        { service: MCP_SERVER_SERVICE, mcp_method_name: semconv.MCP_METHOD_TOOLS_CALL, severity: 'warning' },
      ],
      ['ResumewatchDetectorDown', { instance: inst('dead'), job: JOB, severity: 'critical' }],
      ['ResumewatchDetectorNoSpans', { instance: inst('idle'), job: JOB, severity: 'warning' }],
      ['ResumewatchDetectorRejectingSpans', { instance: inst('capped'), job: JOB, severity: 'warning' }],
      ['ResumewatchDetectorEvictingState', { instance: inst('capped'), job: JOB, severity: 'warning' }],
    ];
    const matches = (a: ActiveAlert, name: string, labels: Record<string, string>): boolean =>
      a.state === 'firing' &&
      a.labels.alertname === name &&
      Object.entries(labels).every(([k, v]) => a.labels[k] === v);
    let missing: string[] = [];
    const alerts = await waitFor(
      'every expected alert firing',
      async () => {
        const r = await prom('/api/v1/alerts');
        const list = (r.data as { alerts: ActiveAlert[] }).alerts;
        missing = expected
          .filter(([n, l]) => !list.some((a) => matches(a, n, l)))
          .map(([n, l]) => `${n} ${JSON.stringify(l)}`);
        if (missing.length > 0)
          throw new Error(
            `not firing: ${missing.join('; ')}; active: ${list.map((a) => `${a.labels.alertname}(${a.state})`).join(', ')}`,
          );
        return list;
      },
      150_000,
      1000,
    );
    const shipped = new Map(
      loadRules()
        .filter((r) => r.alert)
        .map((r) => [r.alert!, r.annotations ?? {}]),
    );
    for (const [name, labels] of expected) {
      const a = alerts.find((x) => matches(x, name, labels))!;
      // the shipped link: the configured runbook base, anchored at the alert
      expect(a.annotations.runbook_url).toBe(shipped.get(name)?.runbook_url);
      expect(a.annotations.runbook_url).toBe(runbookUrl(name));
      expect(a.annotations.summary).not.toMatch(/\{\{|<no value>/);
      expect(a.annotations.description).not.toMatch(/\{\{|<no value>|NaN/);
      if (labels.service) expect(a.annotations.description).toContain(labels.service);
      if (labels.instance) expect(a.annotations.description).toContain(labels.instance);
      if (labels.server) expect(a.annotations.description).toContain(labels.server);
    }
    // and nothing else: no alert the scenarios do not call for, on any service or replica
    const unexpected = alerts.filter((a) => !expected.some(([n, l]) => matches({ ...a, state: 'firing' }, n, l)));
    // (the synthetic client's empty replays are all retracted: no McpAmbiguousEmptyReplay for it)
    expect(
      unexpected.map(
        (a) => `${a.labels.alertname} ${a.labels.service ?? a.labels.server ?? a.labels.instance ?? ''} (${a.state})`,
      ),
    ).toEqual([]);
    // the healthy service, whose spans do reach the detectors, and the healthy detector raise nothing
    expect(traffic!.stats()[Service.HEALTHY]!.runs).toBeGreaterThan(0);
    const healthyTerminals = await prom(
      `/api/v1/query?query=${encodeURIComponent(`${semconv.METRIC_TERMINAL_EVENTS_TOTAL}{${semconv.LABEL_SERVICE}="${Service.HEALTHY}"}`)}`,
    );
    expect((healthyTerminals.data as { result: unknown[] }).result.length).toBeGreaterThan(0);
    expect(alerts.filter((a) => a.labels.service === Service.HEALTHY)).toEqual([]);
    expect(alerts.filter((a) => a.labels.instance === inst('main'))).toEqual([]);
  }, 180_000);

  it('returns data for every query of every dashboard panel', async () => {
    const generated = readdirSync(join(repoRoot, 'dashboards/generated')).filter((f) => f.endsWith('.json'));
    expect(generated.length).toBeGreaterThanOrEqual(2);
    const queries: { where: string; expr: string }[] = [];
    for (const f of generated) {
      const d = JSON.parse(readFileSync(join(repoRoot, 'dashboards/generated', f), 'utf8')) as {
        panels: { type: string; title: string; targets?: { expr: string }[] }[];
      };
      for (const p of d.panels)
        for (const t of p.targets ?? []) queries.push({ where: `${f} / ${p.title}`, expr: t.expr });
    }
    // The gateway's own series come from a gateway, which this stack does not run (its detectors are
    // `serve`s); the gateway's /metrics is read by its own tests (packages/gateway/test). The stack scrapes
    // it under the same job (deploy/prometheus), so its panels read the same series there.
    const gatewayOnly = (expr: string): boolean =>
      semconv.GATEWAY_METRICS.some((m) => expr.includes(m.name)) && !semconv.METRICS.some((m) => expr.includes(m.name));
    const served = queries.filter((q) => !gatewayOnly(q.expr));
    expect(served.length).toBeLessThan(queries.length);
    const substitute = (e: string): string =>
      e.replaceAll('$__rate_interval', '15s').replaceAll('$service', '.*').replaceAll('$instance', '.*');
    const empty = await waitFor(
      'data behind every panel',
      async () => {
        const missing: string[] = [];
        for (const q of served) {
          const r = await prom(`/api/v1/query?query=${encodeURIComponent(substitute(q.expr))}`);
          const result = (r.data as { result: unknown[] } | undefined)?.result ?? [];
          if (r.status !== 'success' || result.length === 0) missing.push(`${q.where}: ${q.expr}`);
        }
        // Thrown, so that a timeout names the panels still without data.
        if (missing.length > 0) throw new Error(`no data: ${missing.join('; ')}`);
        return missing;
      },
      90_000,
      1000,
    );
    expect(empty).toEqual([]);
  }, 120_000);

  it('counts a refused 2026-07-28 probe apart: the era share of a client that fell back reads 1 (issue 31)', async () => {
    // The synthetic client of SERVER_DEFECTS probes with server/discover at 2026-07-28, is refused 400, and
    // runs its initialize in the session era: all of its era traffic is session-era traffic.
    const q = overviewQueries(config);
    const forService = (e: string): string =>
      e.replaceAll('$__rate_interval', '15s').replaceAll('$service', Service.SERVER_DEFECTS);
    const sample = async (expr: string) => {
      const r = await prom(`/api/v1/query?query=${encodeURIComponent(forService(expr))}`);
      return (r.data as { result: { metric: Record<string, string>; value: [number, string] }[] }).result;
    };
    const [share, refused] = await waitFor(
      'the era panels of the synthetic client',
      async () => {
        const both = [await sample(q.sessionEraShare), await sample(q.negotiationsRefused)] as const;
        return both[0].length > 0 && both[1].length > 0 ? both : undefined;
      },
      60_000,
      1000,
    );
    expect(share.map((s) => [s.metric[semconv.LABEL_SERVICE], Number(s.value[1])])).toEqual([
      [Service.SERVER_DEFECTS, 1],
    ]);
    expect(refused.map((s) => [s.metric[semconv.LABEL_SERVICE], s.metric[semconv.LABEL_VERSION]])).toEqual([
      [Service.SERVER_DEFECTS, semconv.STATELESS_PROTOCOL_VERSION],
    ]);
    expect(Number(refused[0]!.value[1])).toBeGreaterThan(0);
  }, 90_000);

  it('counts the tasks created by shape, their polls and the live task records', async () => {
    const q = overviewQueries(config);
    const sample = async (expr: string) => {
      const e = expr.replaceAll('$__rate_interval', '15s').replaceAll('$service', '.*');
      const r = await prom(`/api/v1/query?query=${encodeURIComponent(e)}`);
      return (r.data as { result: { metric: Record<string, string>; value: [number, string] }[] }).result;
    };
    const [created, polls, live] = await waitFor(
      'the task panels of the synthetic task client',
      async () => {
        const all = [
          await sample(q.tasksCreatedByShape),
          await sample(q.taskPolls),
          await sample(q.liveTasks),
        ] as const;
        return all.every((r) => r.length > 0) ? all : undefined;
      },
      60_000,
      1000,
    );
    const { LABEL_SERVICE, LABEL_SHAPE, TaskShape } = semconv;
    // The client's own calls answered with a handle, of both shapes; the server's span of each first attempt.
    expect(created.map((s) => `${s.metric[LABEL_SERVICE]} ${s.metric[LABEL_SHAPE]}`).sort()).toEqual([
      `${TASK_CLIENT} ${TaskShape.AUGMENTED}`,
      `${TASK_CLIENT} ${TaskShape.EXTENSION}`,
      `${TASK_SERVER} ${TaskShape.AUGMENTED}`,
    ]);
    expect(polls.map((s) => s.metric[LABEL_SERVICE])).toEqual([TASK_CLIENT]);
    expect(Number(polls[0]!.value[1])).toBeGreaterThan(0);
    // The main detector holds the task records; the capped one, fed no task spans, none.
    const held = new Map(live.map((s) => [s.metric.instance, Number(s.value[1])]));
    expect(held.get(`${HOST}:${ports.main.metrics}`)).toBeGreaterThan(0);
    expect(held.get(`${HOST}:${ports.capped.metrics}`)).toBe(0);
  }, 90_000);

  it('keeps the trace_id exemplars of the findings counter', async () => {
    const found = await waitFor(
      'exemplars on the findings counter',
      async () => {
        const end = Date.now() / 1000;
        const r = await prom(
          `/api/v1/query_exemplars?query=${encodeURIComponent(semconv.METRIC_FINDINGS_TOTAL)}&start=${end - 300}&end=${end}`,
        );
        const sets = (r.data as { exemplars: { labels: Record<string, string> }[] }[]) ?? [];
        const ex = sets.flatMap((s) => s.exemplars);
        return ex.length > 0 ? ex : undefined;
      },
      60_000,
      1000,
    );
    expect(found[0]!.labels[semconv.EXEMPLAR_TRACE_ID]).toMatch(/^[0-9a-f]{32}$/);
  }, 90_000);

  it('keeps the conventions labels and the trace_id exemplars of the MCP operations histogram', async () => {
    const { LABEL_ERROR_TYPE, LABEL_GEN_AI_TOOL_NAME, LABEL_MCP_METHOD_NAME, LABEL_RPC_RESPONSE_STATUS_CODE } = semconv;
    const count = `${semconv.METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS}_count{${semconv.LABEL_SERVICE}="${MCP_SERVER_SERVICE}"}`;
    const series = (await prom(`/api/v1/series?match[]=${encodeURIComponent(count)}`)).data as Record<string, string>[];
    const labelSets = series
      .map((l) =>
        [LABEL_MCP_METHOD_NAME, LABEL_GEN_AI_TOOL_NAME, LABEL_ERROR_TYPE, LABEL_RPC_RESPONSE_STATUS_CODE]
          .map((name) => l[name] ?? '')
          .join(' '),
      )
      .sort();
    expect(labelSets).toEqual([
      'tools/call echo  ',
      'tools/call fail -32603 -32603',
      // The caller's error: its status code, no error of the server's.
      'tools/call no_such_tool  -32602',
      'tools/call report  ',
      'tools/list   ',
    ]);
    const bucket = `${semconv.METRIC_MCP_SERVER_OPERATION_DURATION_SECONDS}_bucket`;
    const found = await waitFor(
      'exemplars on the operations histogram',
      async () => {
        const end = Date.now() / 1000;
        const query = `${bucket}{${semconv.LABEL_GEN_AI_TOOL_NAME}="report"}`;
        const r = await prom(
          `/api/v1/query_exemplars?query=${encodeURIComponent(query)}&start=${end - 300}&end=${end}`,
        );
        const sets = (r.data as { exemplars: { labels: Record<string, string>; value: string }[] }[]) ?? [];
        const ex = sets.flatMap((s) => s.exemplars);
        return ex.length > 0 ? ex : undefined;
      },
      60_000,
      1000,
    );
    // The 30 s report's trace, as its span carried it.
    expect(found[0]!.labels[semconv.EXEMPLAR_TRACE_ID]).toMatch(/^[0-9a-f]{32}$/);
    expect(Number(found[0]!.value)).toBe(30);
  }, 90_000);
});
