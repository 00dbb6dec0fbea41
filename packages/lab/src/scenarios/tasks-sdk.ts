// The 2025-11-25 task scenarios, on the real SDK 1.x task API (server and client): each starts its own
// task server (src/tasks/task-server.ts), and for the lost reply a fault proxy in front of it.
import { setTimeout as sleep } from 'node:timers/promises';
import { META_IDEMPOTENCY_KEY, TaskMethod, TaskStatus } from '@resumewatch/semconv';
import { startFaultProxy } from '../fault-proxy.js';
import type { FaultProxy } from '../fault-proxy.js';
import { TASK_TOOL, startTaskLabServer } from '../tasks/task-server.js';
import type { TaskLabServer, TaskLabServerOptions } from '../tasks/task-server.js';
import { connectSdkTaskClient, describeError, fetchTaskResult, streamTaskCall } from '../tasks/sdk-task-client.js';
import type { SdkTaskClient } from '../tasks/sdk-task-client.js';
import { resolveOptions } from './options.js';
import type { ResolvedScenarioOptions, ScenarioOptions } from './options.js';
import { waitUntil } from './sdk-clients.js';
import { expectedTaskFindings } from './summary.js';
import type { ScenarioSummary, TaskScenarioName } from './summary.js';

/** The storm: one `tasks/get` every 10 ms, for this long at most. */
const STORM_SPACING_MS = 10;
const STORM_MS = 2_500;

interface Rig {
  server: TaskLabServer;
  proxy: FaultProxy | undefined;
  session: SdkTaskClient;
  options: ResolvedScenarioOptions;
  started: number;
  key: string;
}

/** Starts the server (and the proxy), connects the client, runs `body`, closes everything. */
async function withRig(
  scenario: TaskScenarioName,
  input: ScenarioOptions,
  defaults: TaskLabServerOptions & { proxy?: boolean },
  body: (rig: Rig) => Promise<{ finding: string; details: Record<string, unknown>; keyed?: boolean }>,
): Promise<ScenarioSummary> {
  const options = resolveOptions(input);
  const started = Date.now();
  const server = await startTaskLabServer({
    ttlMs: options.tasks.ttlMs ?? defaults.ttlMs,
    pollIntervalMs: options.tasks.pollIntervalMs ?? defaults.pollIntervalMs,
    workMs: options.tasks.workMs ?? defaults.workMs,
    decorateServer: options.tasks.decorateServer,
  });
  let front: { url: string; close(): Promise<void> } | undefined;
  let proxy: FaultProxy | undefined;
  try {
    front = options.tasks.front ? await options.tasks.front(server.url) : undefined;
    const upstream = front?.url ?? server.url;
    proxy = defaults.proxy ? await startFaultProxy({ target: upstream }) : undefined;
    const session = await connectSdkTaskClient(proxy?.url ?? upstream, options.fetch, scenario);
    const rig: Rig = { server, proxy, session, options, started, key: `${scenario}-${started}` };
    const { finding, details, keyed } = await body(rig);
    const sessionId = session.transport.sessionId;
    await session.close();
    const results = session.log.filter((entry) => entry.rpc === TaskMethod.RESULT);
    const delivered = results.flatMap((entry) => entry.responses.filter((response) => !response.error));
    return {
      scenario,
      sessionId,
      terminalDeliveries: delivered.length,
      distinctTerminalStreams: results.filter((entry) => entry.responses.some((response) => !response.error)).length,
      reconnects: 0,
      resumeStatuses: [],
      sideEffectCount: server.sideEffectCount(rig.key),
      finding,
      expectedFindings: expectedTaskFindings(scenario, keyed ?? false),
      durationMs: Date.now() - started,
      details: {
        client: 'sdk',
        ttlMs: server.ttlMs,
        pollIntervalMs: server.pollIntervalMs,
        tasksCreated: server.created().map((task) => task.taskId),
        serverRequests: methodCounts(server),
        ...details,
      },
    };
  } finally {
    await proxy?.close();
    await front?.close();
    await server.close();
  }
}

/** The gaps (ms) between consecutive polls, as the server received them. */
export function pollGaps(polls: ReadonlyArray<{ at: number }>): number[] {
  return polls.slice(1).map((poll, i) => poll.at - polls[i]!.at);
}

/** JSON-RPC requests the server received, per method. */
function methodCounts(server: TaskLabServer): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const request of server.requests()) counts[request.method] = (counts[request.method] ?? 0) + 1;
  return counts;
}

/** task-healthy: create, poll at the announced interval (the SDK's own loop), fetch the result within ttl. */
export function runTaskHealthy(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig('task-healthy', input, { workMs: 300 }, async ({ server, session, key }) => {
    const run = await streamTaskCall(session.client, TASK_TOOL, { key }, { ttlMs: server.ttlMs });
    return {
      finding: `callToolStream created task ${run.created?.taskId ?? '-'}, polled ${run.statuses.length} time(s) (${run.statuses.join(', ')}) at the announced ${server.pollIntervalMs} ms and fetched the result within its ttl.`,
      details: { run },
    };
  });
}

/** task-rereads: the healthy flow, then `tasks/get` and `tasks/result` read twice more after completion. */
export function runTaskRereads(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig('task-rereads', input, { workMs: 300 }, async ({ server, session, key }) => {
    const run = await streamTaskCall(session.client, TASK_TOOL, { key }, { ttlMs: server.ttlMs });
    const taskId = run.created!.taskId;
    const rereads: Array<{ method: string; status?: string; text?: string }> = [];
    for (let i = 0; i < 2; i++) {
      const task = await session.client.experimental.tasks.getTask(taskId);
      rereads.push({ method: TaskMethod.GET, status: task.status });
      rereads.push({ method: TaskMethod.RESULT, text: await fetchTaskResult(session.client, taskId) });
    }
    return {
      finding: `Task ${taskId} completed and its result was fetched; tasks/get and tasks/result were read again twice each, the same answers (the spec makes them idempotent).`,
      details: { run, rereads },
    };
  });
}

/**
 * task-reissue-after-lost-reply: the fault proxy cuts the response to the task-augmented call before
 * its client read a byte of the `CreateTaskResult` (the server created the task); the SDK yields the
 * error; the application re-issues the same call; the server now holds two tasks for one piece of work.
 */
export function runTaskReissueAfterLostReply(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig(
    'task-reissue-after-lost-reply',
    input,
    { workMs: 300, proxy: true },
    async ({ server, proxy, session, key, options }) => {
      const idempotencyKey =
        options.tasks.idempotencyKey === true ? `${key}-key` : options.tasks.idempotencyKey || undefined;
      const meta = idempotencyKey !== undefined ? { [META_IDEMPOTENCY_KEY]: idempotencyKey } : undefined;
      proxy!.armCut({ method: 'POST', contentType: 'application/json', afterBytes: 0 });
      const first = await streamTaskCall(session.client, TASK_TOOL, { key }, { ttlMs: server.ttlMs, meta });
      const reissue = await streamTaskCall(session.client, TASK_TOOL, { key }, { ttlMs: server.ttlMs, meta });
      const created = server.created();
      return {
        keyed: idempotencyKey !== undefined,
        finding: `The reply to the first call was cut before its client read it (${first.error?.message ?? 'no error'}); the application re-issued the call: the server created ${created.length} task(s) and charged ${server.sideEffectCount(key)} time(s).`,
        details: {
          idempotencyKey,
          firstAttempt: first,
          reissue,
          cuts: proxy!.cuts.length,
          tasksCreatedCount: created.length,
          /** The `_meta` of each tools/call the server received: the key, when sent, on both. */
          callMetas: server
            .requests()
            .filter((request) => request.method === 'tools/call')
            .map((request) => request.meta),
        },
      };
    },
  );
}

/**
 * task-result-after-expiry: the task completes (one poll says so); the client comes back for its result
 * after the store purged the task (ttl 1 s by default): `tasks/result` answers -32602.
 */
export function runTaskResultAfterExpiry(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig('task-result-after-expiry', input, { ttlMs: 1_000, workMs: 100 }, async ({ server, session, key }) => {
    const run = await streamTaskCall(session.client, TASK_TOOL, { key }, { ttlMs: server.ttlMs, untilCreated: true });
    const taskId = run.created!.taskId;
    const held = () => server.tasks().find((task) => task.taskId === taskId);
    await waitUntil(() => held()?.status === TaskStatus.COMPLETED, 5_000);
    const seen = await session.client.experimental.tasks.getTask(taskId);
    // The store deletes the task ttl after it completed: wait for that, on the server's own word.
    const purged = await waitUntil(() => held() === undefined, (server.ttlMs ?? 0) + 5_000);
    let answer: { code: number | undefined; message: string } | undefined;
    try {
      await fetchTaskResult(session.client, taskId);
    } catch (error) {
      answer = describeError(error);
    }
    return {
      finding: `Task ${taskId} completed (tasks/get said ${seen.status}); the client asked for its result after its ttl (${server.ttlMs} ms): ${answer ? `${answer.code} ${answer.message}` : 'it came back'}.`,
      details: { taskId, statusSeen: seen.status, purged, resultAnswer: answer },
    };
  });
}

/** task-poll-storm: `tasks/get` every 10 ms against an announced interval of 500 ms, for ~2.5 s. */
export function runTaskPollStorm(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig(
    'task-poll-storm',
    input,
    { workMs: STORM_MS, pollIntervalMs: 500 },
    async ({ server, session, key }) => {
      const run = await streamTaskCall(session.client, TASK_TOOL, { key }, { ttlMs: server.ttlMs, untilCreated: true });
      const taskId = run.created!.taskId;
      const announced = run.created!.pollInterval;
      const pollTimes: number[] = [];
      const stormStarted = Date.now();
      let status: string = run.created!.status;
      while (status === TaskStatus.WORKING && Date.now() - stormStarted < STORM_MS) {
        pollTimes.push(Date.now());
        status = (await session.client.experimental.tasks.getTask(taskId)).status;
        await sleep(STORM_SPACING_MS);
      }
      const resultText = await fetchTaskResult(session.client, taskId);
      const gaps = pollTimes.slice(1).map((at, i) => at - pollTimes[i]!);
      return {
        finding: `${pollTimes.length} tasks/get in ${Date.now() - stormStarted} ms against an announced pollInterval of ${announced} ms; the result fetched at the end.`,
        details: {
          taskId,
          announcedPollInterval: announced,
          polls: pollTimes.length,
          pollsFasterThanInterval: gaps.filter((gap) => announced !== undefined && gap < announced).length,
          serverPollGaps: pollGaps(server.requests().filter((request) => request.method === TaskMethod.GET)),
          lastStatus: status,
          resultText,
        },
      };
    },
  );
}

/** task-cancelled: the client cancels its working task (`tasks/cancel`); the work charges nothing. */
export function runTaskCancelled(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig('task-cancelled', input, { workMs: 3_000 }, async ({ server, session, key }) => {
    const run = await streamTaskCall(session.client, TASK_TOOL, { key }, { ttlMs: server.ttlMs, untilCreated: true });
    const taskId = run.created!.taskId;
    const before = await session.client.experimental.tasks.getTask(taskId);
    const cancelled = await session.client.experimental.tasks.cancelTask(taskId);
    const after = await session.client.experimental.tasks.getTask(taskId);
    return {
      finding: `Task ${taskId} was ${before.status}; the client cancelled it: tasks/cancel answered ${cancelled.status}, tasks/get then ${after.status}; ${server.sideEffectCount(key)} side effect(s).`,
      details: { taskId, statusBefore: before.status, cancelAnswer: cancelled.status, statusAfter: after.status },
    };
  });
}
