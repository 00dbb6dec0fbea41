/**
 * What tasks cost the detector, in this process:
 * - CPU per `tasks/get` span of a live task (Detector.ingest with its metrics, as serve and the gateway
 *   run it) against a `tools/call` span without a task id (a request before tasks), alternating rounds.
 *   Each task is polled once per its announced interval: a poll's steady cost, no storm. The target is
 *   on the whole poll through the gateway (gateway-tasks); this says what the tasks family adds.
 * - Bytes per live task record (heap without code space, plus array buffers, after full GCs), over
 *   `--records` tasks with 36-character ids: never polled, and polled 64 times (its poll-time ring at its
 *   largest). Target: the bytes task-record.ts and the detector README state.
 */
import { randomUUID } from 'node:crypto';
import { Detector, type AttributeValue, type SpanRecord } from '@resumewatch/detector';
import * as S from '@resumewatch/semconv';
import { alternate, arg, compare, figure, heapNow } from '../../../bench/harness.js';
import { DetectorMetrics } from '../src/metrics.js';
import { createTask, getTask } from '../../detector/test/helpers/task-spans.js';

const ROUNDS = arg('rounds', 12, 2);
const SPANS = arg('spans', 20_000, 500);
const RECORDS = arg('records', 20_000, 500);
const TASKS = 1_000;
const POLLED = 64;
const INTERVAL_MS = 500;
const TTL_MS = 3_600_000;
const T0 = 1_700_000_000_000;
const SESSION = randomUUID();

let count = 0;
function requestSpan(method: string, t: number, extra: Record<string, AttributeValue>): SpanRecord {
  count++;
  return {
    traceId: count.toString(16).padStart(32, '0'),
    spanId: count.toString(16).padStart(16, '0'),
    name: method,
    kind: 3,
    startTimeUnixMs: t,
    endTimeUnixMs: t + 5,
    attributes: {
      [S.ATTR_MCP_METHOD_NAME]: method,
      [S.ATTR_JSONRPC_REQUEST_ID]: count,
      [S.ATTR_MCP_SESSION_ID]: SESSION,
      [S.ATTR_MCP_PROTOCOL_VERSION]: '2025-11-25',
      ...extra,
    },
    service: 'bench',
  };
}
// The TASKS tasks polled in turn, INTERVAL_MS / TASKS apart: each once per its interval.
const step = INTERVAL_MS / TASKS;
const make = {
  poll: (i: number) =>
    requestSpan(S.TaskMethod.GET, T0 + i * step, {
      [S.ATTR_MCP_TASK_ID]: `task-${i % TASKS}`,
      [S.ATTR_MCP_TASK_STATUS]: S.TaskStatus.WORKING,
      [S.ATTR_MCP_TASK_TTL_MS]: TTL_MS,
      [S.ATTR_MCP_TASK_POLL_INTERVAL_MS]: INTERVAL_MS,
    }),
  request: (i: number) => requestSpan(S.MCP_METHOD_TOOLS_CALL, T0 + i * step, { [S.ATTR_GEN_AI_TOOL_NAME]: 'weather' }),
};
const metrics = new DetectorMetrics();
let findings = 0;
const detector = new Detector({ events: metrics, onFinding: (f) => void (findings++, metrics.finding(f, 0)) });
for (let k = 0; k < TASKS; k++)
  detector.ingest(
    createTask(T0 - INTERVAL_MS, `task-${k}`, {
      service: 'bench',
      session: SESSION,
      ttl: TTL_MS,
      interval: INTERVAL_MS,
    }),
  );
const cpu = await alternate(['poll', 'request'] as const, ROUNDS, async (kind, r) => {
  const from = (r + 1) * SPANS; // both kinds advance in time together: round r's spans start at the same time
  const spans = Array.from({ length: SPANS }, (_, i) => make[kind](from + i));
  (globalThis as { gc?: () => void }).gc?.();
  const c0 = process.cpuUsage();
  for (let i = 0; i < spans.length; i++) detector.ingest(spans[i]!);
  const u = process.cpuUsage(c0);
  return (u.user + u.system) / SPANS;
});
if (detector.stats().tasks !== TASKS || findings !== 0)
  throw new Error(`${detector.stats().tasks} live tasks of ${TASKS}, ${findings} findings: the polls were not steady`);
const c = compare(cpu.poll, cpu.request);
figure({
  id: 'detector-task-poll',
  what: 'detector, CPU per tasks/get span of a live task (Detector.ingest with its metrics)',
  reference: { what: 'per tools/call span without a task id', value: c.ref, unit: 'µs/span', range: c.refRange },
  ours: { value: c.ours, unit: 'µs/span', range: c.oursRange },
  ratio: c.ratio,
  ratioRange: c.ratioRange,
  note: `what the tasks family adds to a poll: ${c.added.toFixed(2)} µs; the target is on the whole poll (gateway-tasks); ${TASKS} live tasks, ${ROUNDS} alternating rounds of ${SPANS} spans`,
});

/** Task k's id: 36 characters, a UUID's shape, made anew for each span that names it. */
const taskId = (k: number): string => `${k.toString(16).padStart(8, '0')}-7a5c-4e1b-9d2f-0c8b6a4e2f10`;
async function recordBytes(): Promise<{ never: number; polled: number }> {
  const d = new Detector({ maxTasksPerService: RECORDS });
  const before = (await heapNow()).heap;
  for (let k = 0; k < RECORDS; k++)
    d.ingest(
      createTask(T0, taskId(k), { service: 'bench', session: randomUUID(), ttl: TTL_MS, interval: INTERVAL_MS }),
    );
  const created = (await heapNow()).heap;
  for (let p = 1; p <= POLLED; p++)
    for (let k = 0; k < RECORDS; k++)
      d.ingest(getTask(T0 + p * INTERVAL_MS, taskId(k), { service: 'bench', status: S.TaskStatus.WORKING }));
  const polled = (await heapNow()).heap;
  if (d.stats().tasks !== RECORDS) throw new Error(`${d.stats().tasks} live task records of ${RECORDS}`);
  return { never: (created - before) / RECORDS, polled: (polled - before) / RECORDS };
}
await recordBytes(); // compiles the paths measured
const bytes = await recordBytes();
// The bytes task-record.ts (and the detector README) state for a record.
for (const [key, what, stated] of [
  ['never', 'never polled', 1.5 * 1024],
  ['polled', `polled ${POLLED} times (its poll-time ring full)`, 2.4 * 1024],
] as const)
  figure({
    id: `task-record-${key}`,
    what: `bytes per live task record, ${what}, ${RECORDS} live`,
    target: { text: `≤ the ${(stated / 1024).toFixed(1)} KB task-record.ts states`, bound: 1, dir: '<=' },
    reference: { what: 'the bytes stated', value: stated, unit: 'bytes' },
    ours: { value: bytes[key], unit: 'bytes' },
    ratio: bytes[key] / stated,
    heldBy: 'the statement or the record must change',
    note: 'heap (code space left out) + array buffers after full GCs: ids, the creating span, its entries in its service map and the trace index',
  });
