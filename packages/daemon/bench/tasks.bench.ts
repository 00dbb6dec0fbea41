/**
 * What tasks cost the detector (issue 38's "cost and bounds"), in this process:
 *
 * - CPU per span: Detector.ingest (reporting to DetectorMetrics, as serve and the gateway run it) of a
 *   `tasks/get` span naming a live task against an ordinary `tools/call` span (no task id: a request
 *   before tasks), the same common attributes (session, JSON-RPC id, protocol version 2025-11-25),
 *   in alternating rounds whose order flips each round. Each round's spans are made before it is timed
 *   (new span ids, times going on), then a full GC. The polls keep to the announced interval (every
 *   task is polled once per `tasks` polls, interval apart), so that no poll storm is judged: a poll's
 *   steady cost. The ratio poll / request says what the tasks family adds to a request span.
 * - Bytes per live task record: heap used (code space left out) plus array buffers (the records'
 *   Float64Array backing stores), after full GCs, before and after `--records` tasks created through
 *   creating spans (36-character task and session ids, as the record's comment in task-record.ts
 *   states), over the records: never polled, then the same records once each was polled 64 times
 *   (its poll-time ring at its largest). The spans are made and fed one at a time: only what the
 *   detector keeps is counted. Needs `node --expose-gc`.
 *
 *   node --expose-gc --import tsx bench/tasks.bench.ts [--rounds 12] [--spans 20000] [--tasks 1000]
 *     [--records 20000] [--smoke]        (pnpm bench detector-tasks)
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { getHeapSpaceStatistics } from 'node:v8';
import { Detector, type AttributeValue, type SpanRecord } from '@resumewatch/detector';
import {
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TASK_POLL_INTERVAL_MS,
  ATTR_MCP_TASK_STATUS,
  ATTR_MCP_TASK_TTL_MS,
  MCP_METHOD_TOOLS_CALL,
  TaskMethod,
  TaskStatus,
} from '@resumewatch/semconv';
import { DetectorMetrics } from '../src/metrics.js';
import { createTask, getTask } from '../../detector/test/helpers/task-spans.js';
import { figure } from '../../../bench/figure.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '12' },
    spans: { type: 'string', default: '20000' },
    tasks: { type: 'string', default: '1000' },
    records: { type: 'string', default: '20000' },
    smoke: { type: 'boolean', default: false },
  },
});
const SMOKE = values.smoke;
const ROUNDS = SMOKE ? 2 : Number(values.rounds);
const WARM = SMOKE ? 0 : 2;
const SPANS = SMOKE ? 500 : Number(values.spans);
const TASKS = SMOKE ? 50 : Number(values.tasks);
const RECORDS = SMOKE ? 500 : Number(values.records);
const POLLED = 64;
const INTERVAL_MS = 500;
const TTL_MS = 3_600_000;
const T0 = 1_700_000_000_000;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const range = (xs: number[]): [number, number] => [Math.min(...xs), Math.max(...xs)];
const fmt = (n: number, d = 2) => n.toFixed(d);

// --- CPU per span: a poll of a live task against a request before tasks ---
const SESSION = randomUUID();
let spanCount = 0;
/** A request span as a client's instrumentation records it: its attributes, and the ones of its kind. */
function requestSpan(method: string, t: number, extra: Record<string, AttributeValue>): SpanRecord {
  spanCount++;
  return {
    traceId: spanCount.toString(16).padStart(32, '0'),
    spanId: spanCount.toString(16).padStart(16, '0'),
    name: method,
    kind: 3,
    startTimeUnixMs: t,
    endTimeUnixMs: t + 5,
    attributes: {
      [ATTR_MCP_METHOD_NAME]: method,
      [ATTR_JSONRPC_REQUEST_ID]: spanCount,
      [ATTR_MCP_SESSION_ID]: SESSION,
      [ATTR_MCP_PROTOCOL_VERSION]: '2025-11-25',
      ...extra,
    },
    service: 'bench',
  };
}
/** Polls of the TASKS tasks in turn, INTERVAL_MS / TASKS apart: each task polled once per interval. */
const step = INTERVAL_MS / TASKS;
const pollAt = (i: number): SpanRecord =>
  requestSpan(TaskMethod.GET, T0 + i * step, {
    [ATTR_MCP_TASK_ID]: `task-${i % TASKS}`,
    [ATTR_MCP_TASK_STATUS]: TaskStatus.WORKING,
    [ATTR_MCP_TASK_TTL_MS]: TTL_MS,
    [ATTR_MCP_TASK_POLL_INTERVAL_MS]: INTERVAL_MS,
  });
const callAt = (i: number): SpanRecord =>
  requestSpan(MCP_METHOD_TOOLS_CALL, T0 + i * step, { [ATTR_GEN_AI_TOOL_NAME]: 'weather' });

const metrics = new DetectorMetrics();
let findings = 0;
const detector = new Detector({
  events: metrics,
  onFinding: (f) => {
    findings++;
    metrics.finding(f, 0);
  },
});
for (let k = 0; k < TASKS; k++)
  detector.ingest(
    createTask(T0 - INTERVAL_MS, `task-${k}`, {
      service: 'bench',
      session: SESSION,
      ttl: TTL_MS,
      interval: INTERVAL_MS,
    }),
  );
const cpu = { poll: [] as number[], request: [] as number[] };
for (let round = 0; round < ROUNDS + WARM; round++) {
  const from = round * SPANS;
  const spans = {
    poll: Array.from({ length: SPANS }, (_, i) => pollAt(from + i)),
    request: Array.from({ length: SPANS }, (_, i) => callAt(from + i)),
  };
  for (const kind of round % 2 === 0 ? (['poll', 'request'] as const) : (['request', 'poll'] as const)) {
    gc();
    const list = spans[kind];
    const c0 = process.cpuUsage();
    for (let i = 0; i < list.length; i++) detector.ingest(list[i]!);
    const u = process.cpuUsage(c0);
    if (round >= WARM) cpu[kind].push((u.user + u.system) / SPANS);
  }
}
const live = detector.stats().tasks;
// The polls were of live tasks, each kept to its interval: nothing else was measured.
if (live !== TASKS || findings !== 0) throw new Error(`${live} live tasks of ${TASKS}, ${findings} findings`);
const ratios = cpu.poll.map((p, i) => p / cpu.request[i]!);
console.log(
  `detector, µs CPU per span (median of ${ROUNDS} alternating rounds of ${SPANS}): tasks/get of a live task ${fmt(median(cpu.poll), 3)}, ` +
    `tools/call without a task ${fmt(median(cpu.request), 3)}; round ratios ${ratios.map((r) => fmt(r)).join(' ')}`,
);
figure({
  bench: 'detector',
  name: 'detector, CPU per tasks/get span of a live task (Detector.ingest with its metrics), median of round ratios to a tools/call span',
  value: median(cpu.poll),
  unit: 'µs CPU per span',
  range: range(cpu.poll),
  reference: {
    name: 'the same detector, per tools/call span without a task id (a request span before tasks)',
    value: median(cpu.request),
    unit: 'µs CPU per span',
    range: range(cpu.request),
  },
  ratio: median(ratios),
  note: `the tasks family's share of a poll: the gateway-tasks figure holds the whole poll against a request; ${TASKS} live tasks, each polled once per its ${INTERVAL_MS} ms interval, no finding; ${ROUNDS} alternating rounds of ${SPANS} spans, this process's CPU`,
});

// --- Bytes per live task record ---
function heapUsed(): number {
  for (let i = 0; i < 4; i++) gc!();
  const m = process.memoryUsage();
  const code = getHeapSpaceStatistics().find((s) => s.space_name === 'code_space')?.space_used_size ?? 0;
  return m.heapUsed - code + m.arrayBuffers;
}
/** Task k's id: 36 characters, a UUID's shape, made anew for each span that names it (the detector keeps its own). */
const taskId = (k: number): string => `${k.toString(16).padStart(8, '0')}-7a5c-4e1b-9d2f-0c8b6a4e2f10`;
function recordBytes(): { never: number; polled: number; live: number } {
  const d = new Detector({ maxTasksPerService: RECORDS });
  const before = heapUsed();
  for (let k = 0; k < RECORDS; k++)
    d.ingest(
      createTask(T0, taskId(k), { service: 'bench', session: randomUUID(), ttl: TTL_MS, interval: INTERVAL_MS }),
    );
  const created = heapUsed();
  // Each task polled POLLED times, an interval apart (no storm): its ring of poll times at its largest.
  for (let p = 1; p <= POLLED; p++)
    for (let k = 0; k < RECORDS; k++)
      d.ingest(getTask(T0 + p * INTERVAL_MS, taskId(k), { service: 'bench', status: TaskStatus.WORKING }));
  const polled = heapUsed();
  const live = d.stats().tasks;
  if (live !== RECORDS) throw new Error(`${live} live task records of ${RECORDS}`);
  return { never: (created - before) / RECORDS, polled: (polled - before) / RECORDS, live };
}
recordBytes(); // compiles the paths measured
const bytes = recordBytes();
console.log(
  `task record: ${fmt(bytes.never, 0)} bytes never polled, ${fmt(bytes.polled, 0)} polled ${POLLED} times (${bytes.live} live records)`,
);
// The bytes task-record.ts (and the detector README) state for a record: what these figures check.
const STATED = { never: 1.5 * 1024, polled: 2.4 * 1024 };
for (const [name, value, stated] of [
  ['never polled', bytes.never, STATED.never],
  [`polled ${POLLED} times (its poll-time ring full)`, bytes.polled, STATED.polled],
] as const)
  figure({
    bench: 'detector',
    name: `detector, bytes per live task record, ${name}, ${bytes.live} live`,
    value,
    unit: 'bytes',
    ratio: value / stated,
    target: `at most the ${fmt(stated / 1024, 1)} KB task-record.ts states (ratio 1.0)`,
    note: `${value <= stated ? 'met' : 'not met'}; heap used (code space left out) + array buffers after full GCs, over the records: 36-character task and session ids, the creating span's trace and span ids, its entries in its service's map and the trace index; \`node --expose-gc\``,
  });
