// The 2026-07-28 task scenarios: the v2 lab server's task extension (src/modern/tasks-extension.ts,
// from the spec text) with a plain fetch client, and the SDK 1.x client against that server.
import { setTimeout as sleep } from 'node:timers/promises';
import { META_IDEMPOTENCY_KEY, TaskField, TaskMethod, TaskStatus, TERMINAL_TASK_STATUSES } from '@resumewatch/semconv';
import { startFaultProxy } from '../fault-proxy.js';
import type { FaultProxy } from '../fault-proxy.js';
import { startModernLabServer } from '../modern/server.js';
import type { ModernLabServer, ModernServerEras } from '../modern/server.js';
import { ExtensionTaskClient } from '../modern/tasks-extension-client.js';
import type { ExtensionAnswer } from '../modern/tasks-extension-client.js';
import { EXTENSION_TASK_TOOL } from '../modern/tasks-extension.js';
import type { ExtensionTasksOptions } from '../modern/tasks-extension.js';
import { resolveOptions } from './options.js';
import type { ResolvedScenarioOptions, ScenarioOptions } from './options.js';
import { connectSdkSession, responsesPerRequest, toolCallPost, waitUntil } from './sdk-clients.js';
import { expectedTaskFindings } from './summary.js';
import { pollGaps } from './tasks-sdk.js';
import type { ScenarioSummary, TaskScenarioName } from './summary.js';

/** The storm: one `tasks/get` every 10 ms, for this long at most. */
const STORM_SPACING_MS = 10;
const STORM_MS = 2_500;

interface Rig {
  server: ModernLabServer;
  proxy: FaultProxy | undefined;
  client: ExtensionTaskClient;
  options: ResolvedScenarioOptions;
  key: string;
}

type Outcome = { finding: string; details: Record<string, unknown>; keyed?: boolean };

async function withRig(
  scenario: TaskScenarioName,
  input: ScenarioOptions,
  defaults: ExtensionTasksOptions & { proxy?: boolean; eras?: ModernServerEras },
  body: (rig: Rig) => Promise<Outcome>,
): Promise<ScenarioSummary> {
  const options = resolveOptions(input);
  const started = Date.now();
  const server = await startModernLabServer({
    eras: defaults.eras ?? 'modern-only',
    ...options.modernServer,
    tasks: {
      ttlMs: options.tasks.ttlMs ?? defaults.ttlMs,
      pollIntervalMs: options.tasks.pollIntervalMs ?? defaults.pollIntervalMs,
      workMs: options.tasks.workMs ?? defaults.workMs,
    },
  });
  let front: { url: string; close(): Promise<void> } | undefined;
  let proxy: FaultProxy | undefined;
  try {
    front = options.tasks.front ? await options.tasks.front(server.url) : undefined;
    const upstream = front?.url ?? server.url;
    proxy = defaults.proxy ? await startFaultProxy({ target: upstream }) : undefined;
    const client = new ExtensionTaskClient(proxy?.url ?? upstream, options.fetch);
    const key = `${scenario}-${started}`;
    const { finding, details, keyed } = await body({ server, proxy, client, options, key });
    const delivered = client.answers.filter(deliversOutcome);
    return {
      scenario,
      sessionId: undefined,
      terminalDeliveries: delivered.length,
      distinctTerminalStreams: delivered.length,
      reconnects: 0,
      resumeStatuses: [],
      sideEffectCount: server.sideEffectCount(key),
      finding,
      expectedFindings: expectedTaskFindings(scenario, keyed ?? false),
      durationMs: Date.now() - started,
      details: {
        client: 'raw',
        ttlMs: server.extensionTasks.ttlMs,
        pollIntervalMs: server.extensionTasks.pollIntervalMs,
        tasksCreated: server.extensionTasks.created().map((task) => task.taskId),
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

/** A `tasks/get` answer that carried the outcome inline (completed: the result; failed: the error). */
function deliversOutcome(answer: ExtensionAnswer): boolean {
  const status = answer.result?.[TaskField.STATUS];
  return answer.method === TaskMethod.GET && (status === TaskStatus.COMPLETED || status === TaskStatus.FAILED);
}

function methodCounts(server: ModernLabServer): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const request of server.extensionTasks.requests()) counts[request.method] = (counts[request.method] ?? 0) + 1;
  return counts;
}

function taskIdOf(answer: ExtensionAnswer): string | undefined {
  const id = answer.result?.[TaskField.TASK_ID];
  return typeof id === 'string' ? id : undefined;
}

/** Polls `tasks/get` every `spacingMs` until the task is terminal (or `maxMs` passed); the answers. */
async function pollUntilTerminal(
  client: ExtensionTaskClient,
  taskId: string,
  spacingMs: number,
  maxMs: number,
): Promise<ExtensionAnswer[]> {
  const polls: ExtensionAnswer[] = [];
  const started = Date.now();
  for (;;) {
    const answer = await client.task(TaskMethod.GET, taskId);
    polls.push(answer);
    const status = answer.result?.[TaskField.STATUS];
    if (answer.error || (typeof status === 'string' && TERMINAL_TASK_STATUSES.includes(status))) return polls;
    if (Date.now() - started >= maxMs) return polls;
    await sleep(spacingMs);
  }
}

const resultText = (answer: ExtensionAnswer | undefined): string | undefined =>
  (answer?.result?.[TaskField.RESULT] as { content?: Array<{ text?: string }> } | undefined)?.content?.[0]?.text;

/** modern-task-healthy: a handle, `tasks/get` at the announced interval, the result inline within its ttl. */
export function runModernTaskHealthy(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig('modern-task-healthy', input, { workMs: 300 }, async ({ server, client, key }) => {
    const created = await client.call(EXTENSION_TASK_TOOL, { key });
    const taskId = taskIdOf(created)!;
    const polls = await pollUntilTerminal(client, taskId, server.extensionTasks.pollIntervalMs, 30_000);
    return {
      finding: `The server answered with task ${taskId} (resultType ${String(created.result?.[TaskField.RESULT_TYPE])}); ${polls.length} tasks/get at the announced ${server.extensionTasks.pollIntervalMs} ms; the last carried the result inline.`,
      details: {
        taskId,
        handle: created.result,
        statuses: polls.map((poll) => poll.result?.[TaskField.STATUS]),
        resultText: resultText(polls.at(-1)),
      },
    };
  });
}

/**
 * modern-task-duplicate: the call's response stream breaks after its progress notification, before the
 * handle (the server created the task first); the application re-issues the same call and polls the
 * second task to its result: two tasks for one piece of work.
 */
export function runModernTaskDuplicate(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig(
    'modern-task-duplicate',
    input,
    { workMs: 300, proxy: true },
    async ({ server, proxy, client, key, options }) => {
      const idempotencyKey =
        options.tasks.idempotencyKey === true ? `${key}-key` : options.tasks.idempotencyKey || undefined;
      const meta = idempotencyKey !== undefined ? { [META_IDEMPOTENCY_KEY]: idempotencyKey } : {};
      proxy!.armCut({ method: 'POST', afterEvents: 1 });
      const first = await client.call(EXTENSION_TASK_TOOL, { key }, meta);
      const reissue = await client.call(EXTENSION_TASK_TOOL, { key }, meta);
      const taskId = taskIdOf(reissue)!;
      const polls = await pollUntilTerminal(client, taskId, server.extensionTasks.pollIntervalMs, 30_000);
      // The first task runs on, unseen: wait for its charge, on the server's word.
      await waitUntil(() => server.sideEffectCount(key) >= 2, 5_000);
      const created = server.extensionTasks.created();
      return {
        keyed: idempotencyKey !== undefined,
        finding: `The first call's stream broke after ${first.notifications} notification(s), before the handle; the application re-issued it: the server created ${created.length} task(s) and charged ${server.sideEffectCount(key)} time(s).`,
        details: {
          idempotencyKey,
          firstAttempt: { broken: first.broken, notifications: first.notifications, handle: first.result },
          reissueTaskId: taskId,
          tasksCreatedCount: created.length,
          cuts: proxy!.cuts.length,
          callMetas: server.extensionTasks
            .requests()
            .filter((request) => request.method === 'tools/call')
            .map((request) => request.meta?.[META_IDEMPOTENCY_KEY]),
          resultText: resultText(polls.at(-1)),
        },
      };
    },
  );
}

/**
 * modern-task-lost: one `tasks/get` while the task works, then the client goes quiet; the task completes
 * (its result never fetched) and is purged at its ttl (1 s by default); the client comes back: -32602
 * "Task has expired".
 */
export function runModernTaskLost(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig('modern-task-lost', input, { ttlMs: 1_000, workMs: 300 }, async ({ server, client, key }) => {
    const created = await client.call(EXTENSION_TASK_TOOL, { key });
    const taskId = taskIdOf(created)!;
    const seen = await client.task(TaskMethod.GET, taskId);
    const tasks = server.extensionTasks;
    const completedOnServer = await waitUntil(() => tasks.status(taskId) === TaskStatus.COMPLETED, 5_000);
    const purged = await waitUntil(() => tasks.wasExpired(taskId), (tasks.ttlMs ?? 0) + 5_000);
    const late = await client.task(TaskMethod.GET, taskId);
    return {
      finding: `Task ${taskId} was ${String(seen.result?.[TaskField.STATUS])} when last polled; it completed and its ttl (${tasks.ttlMs} ms) passed; the client came back: ${late.error ? `${late.error.code} ${late.error.message}` : 'it was still there'}.`,
      details: {
        taskId,
        statusSeen: seen.result?.[TaskField.STATUS],
        completedOnServer,
        purged,
        lateAnswer: late.error,
      },
    };
  });
}

/** modern-task-poll-storm: `tasks/get` every 10 ms against an announced `pollIntervalMs` of 500, for ~2.5 s. */
export function runModernTaskPollStorm(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig(
    'modern-task-poll-storm',
    input,
    { workMs: STORM_MS, pollIntervalMs: 500 },
    async ({ server, client, key }) => {
      const created = await client.call(EXTENSION_TASK_TOOL, { key });
      const taskId = taskIdOf(created)!;
      const announced = created.result?.[TaskField.POLL_INTERVAL_MS] as number | undefined;
      const polls = await pollUntilTerminal(client, taskId, STORM_SPACING_MS, STORM_MS + 1_000);
      const gaps = polls.slice(1).map((poll, i) => poll.at - polls[i]!.at);
      return {
        finding: `${polls.length} tasks/get in ${(polls.at(-1)?.at ?? 0) - (polls[0]?.at ?? 0)} ms against an announced pollIntervalMs of ${announced} ms; the last carried the result.`,
        details: {
          taskId,
          announcedPollInterval: announced,
          polls: polls.length,
          pollsFasterThanInterval: gaps.filter((gap) => announced !== undefined && gap < announced).length,
          serverPollGaps: pollGaps(
            server.extensionTasks.requests().filter((request) => request.method === TaskMethod.GET),
          ),
          lastStatus: polls.at(-1)?.result?.[TaskField.STATUS],
          resultText: resultText(polls.at(-1)),
        },
      };
    },
  );
}

/**
 * task-legacy-client-extension-server: the SDK 1.x client (2025-11-25, session era) calls `charge_task`
 * on the extension server (both eras): it never declared the extension, so it gets the plain result
 * from the SDK, and no task is created.
 */
export async function runTaskLegacyClientExtensionServer(input: ScenarioOptions): Promise<ScenarioSummary> {
  const options = resolveOptions(input);
  const started = Date.now();
  const key = `task-legacy-client-extension-server-${started}`;
  const server = await startModernLabServer({ eras: 'dual', ...options.modernServer });
  let front: { url: string; close(): Promise<void> } | undefined;
  try {
    front = options.tasks.front ? await options.tasks.front(server.url) : undefined;
    const session = await connectSdkSession(
      'sdk',
      front?.url ?? server.url,
      options.fetch,
      'task-legacy-client-extension-server',
    );
    const result = await session.callTool(EXTENSION_TASK_TOOL, { key, workMs: 50 });
    const protocolVersion = session.protocolVersion();
    const sessionId = session.sessionId();
    await session.terminate().catch(() => undefined);
    await session.close();
    const tasksCreated = server.extensionTasks.created().length;
    const post = toolCallPost(session.log, EXTENSION_TASK_TOOL);
    return {
      scenario: 'task-legacy-client-extension-server',
      sessionId,
      terminalDeliveries: post?.responses.length ?? 0,
      distinctTerminalStreams: post && post.responses.length > 0 ? 1 : 0,
      reconnects: 0,
      resumeStatuses: [],
      resultsPerRequest: responsesPerRequest(session.log),
      sideEffectCount: server.sideEffectCount(key),
      finding: `The SDK 1.x client (${protocolVersion ?? '-'}) called ${EXTENSION_TASK_TOOL} on the extension server: a plain result, ${tasksCreated} task(s), ${server.sideEffectCount(key)} side effect(s).`,
      expectedFindings: expectedTaskFindings('task-legacy-client-extension-server', false),
      durationMs: Date.now() - started,
      details: {
        client: 'sdk',
        protocolVersion,
        resultText: result.content?.[0]?.text,
        tasksCreated,
        legs: server.exchanges().map((exchange) => exchange.leg),
        sdkErrors: session.errors,
      },
    };
  } finally {
    await front?.close();
    await server.close();
  }
}
