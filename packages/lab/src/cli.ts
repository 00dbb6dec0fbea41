#!/usr/bin/env node
import { UsageError, isUnreachable, listenErrorMessage, unreachableReason } from './cli-errors.js';
import { COMMANDS, commandHelp, integer, parse, port, scenarioList, url, usage } from './cli-options.js';
import { startLabServer } from './lab-server.js';
import type { LabServer } from './lab-server.js';
import { runLoad } from './load.js';
import { modernServerFromEnv } from './modern-server-hook.js';
import type { LoadReport } from './load.js';
import type { FetchLike } from './mcp-http-client.js';
import { runScenario, scenarioClients } from './scenarios/index.js';
import { SCENARIO_CLIENTS, isScenarioClient } from './scenarios/sdk-clients.js';
import {
  SCENARIO_NAMES,
  TASK_SCENARIO_NAMES,
  LOOP_SCENARIO_NAMES,
  V2_SERVER_SCENARIO_NAMES,
  formatSummary,
  isScenarioName,
} from './scenarios/summary.js';
import type { ScenarioName } from './scenarios/summary.js';
import { formatRequestTimeline } from './timeline-format.js';
import { RunTimeline } from './timeline.js';

async function listenOrExplain(
  options: Parameters<typeof startLabServer>[0] & { host: string; port: number },
): Promise<LabServer> {
  try {
    return await startLabServer(options);
  } catch (error) {
    const message = listenErrorMessage(error, options.host, options.port);
    if (message) throw new UsageError(`server: ${message}`);
    throw error;
  }
}

async function serve(args: string[]): Promise<'serving' | void> {
  const { values } = parse('server', args, 0);
  if (values.help) return void process.stdout.write(commandHelp('server'));
  const eventStore: Record<string, number> = {};
  const capacity = integer(values, 'capacity', 1);
  const ttlMs = integer(values, 'ttl-ms', 1);
  const replayLimit = integer(values, 'replay-limit');
  if (capacity !== undefined) eventStore.capacity = capacity;
  if (ttlMs !== undefined) eventStore.ttlMs = ttlMs;
  if (replayLimit !== undefined) eventStore.finishedStreamReplayLimit = replayLimit;
  const host = typeof values.host === 'string' ? values.host : '127.0.0.1';
  const server = await listenOrExplain({
    port: port(values),
    host,
    eventStore,
    retryIntervalMs: integer(values, 'retry-ms') ?? 100,
  });
  process.stdout.write(
    `resumewatch-lab server\n  MCP      ${server.url}\n  control  ${server.controlUrl} (loopback only)\n`,
  );
  const stop = (): void => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return 'serving';
}

/** The lab server URL of a scenario that starts its own server: never called. */
const UNUSED_SERVER_URL = 'http://127.0.0.1:9/mcp';

/** The URL of the last exchange that never got an HTTP answer: named in the one-line error. */
let unreachableUrl: string | undefined;
/** The control endpoint of the current run: the control calls (global fetch) are not noted one by one. */
let runControlUrl: string | undefined;

/** The scenario's fetch: the process's fetch (looked up per call, so a fetch patched by a hook is used), noting unreachable URLs. */
const noteUnreachable: FetchLike = async (input, init) => {
  try {
    return await globalThis.fetch(input, init);
  } catch (error) {
    if (isUnreachable(error)) unreachableUrl = input instanceof Request ? input.url : String(input);
    throw error;
  }
};

async function run(args: string[]): Promise<void> {
  const { values, positionals } = parse('run', args, 1);
  if (values.help) return void process.stdout.write(commandHelp('run'));
  const name = positionals[0];
  if (name === undefined) throw new UsageError(`run: which scenario? one of ${scenarioList()}`);
  if (!isScenarioName(name)) throw new UsageError(`run: unknown scenario "${name}"; one of ${scenarioList()}`);
  const client = values.client;
  if (client !== undefined && (typeof client !== 'string' || !isScenarioClient(client))) {
    throw new UsageError(`run: --client must be one of ${SCENARIO_CLIENTS.join(', ')}, got "${String(client)}"`);
  }
  if (client !== undefined && !scenarioClients(name).includes(client)) {
    throw new UsageError(`run: scenario ${name} runs with --client ${scenarioClients(name).join(', ')}`);
  }
  const server = url(values, 'server');
  const control = url(values, 'control');
  const maxReconnects = integer(values, 'max-reconnects');
  const resultWaitMs = integer(values, 'result-wait', 1);
  const load = values.clients !== undefined || values.duration !== undefined;
  const clients = integer(values, 'clients', 1) ?? 1;
  const duration = integer(values, 'duration', 1) ?? 10;
  const progress = integer(values, 'progress') ?? 5;
  // The 2026-07-28 scenarios start their own v2 server in process, the task scenarios their own task
  // server (or v2 server): no lab server to start or name.
  const ownServer = [...V2_SERVER_SCENARIO_NAMES, ...TASK_SCENARIO_NAMES, ...LOOP_SCENARIO_NAMES].includes(
    name as never,
  );
  const modernServer = ownServer ? await modernServerFromEnv() : undefined;
  const local = server === undefined && !ownServer ? await startLabServer() : undefined;
  const serverUrl = server ?? local?.url ?? UNUSED_SERVER_URL;
  runControlUrl = control ?? local?.controlUrl ?? new URL('/control', serverUrl).toString();
  const timeline = new RunTimeline();
  const options = {
    serverUrl,
    fetch: load ? noteUnreachable : timeline.wrap(noteUnreachable),
    ...(control !== undefined ? { controlUrl: control } : local ? { controlUrl: local.controlUrl } : {}),
    ...(maxReconnects !== undefined ? { maxReconnects } : {}),
    ...(resultWaitMs !== undefined ? { resultWaitMs } : {}),
    ...(client !== undefined ? { client } : {}),
    ...(modernServer ? { modernServer } : {}),
  };
  try {
    if (load) {
      const against = ownServer ? 'its own v2 server in process' : serverUrl;
      process.stderr.write(`resumewatch-lab: ${name} with ${clients} client(s) for ${duration} s against ${against}\n`);
      const report = await runLoad(name, {
        ...options,
        clients,
        durationMs: duration * 1000,
        ...(progress > 0
          ? {
              onProgress: (r: Readonly<LoadReport>) => process.stderr.write(progressLine(r, duration)),
              progressIntervalMs: progress * 1000,
            }
          : {}),
      });
      if (report.runs === 0 && report.failures > 0 && unreachableUrl !== undefined) throw unreachable(unreachableUrl);
      process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : `${JSON.stringify(report, null, 2)}\n`);
      return;
    }
    const summary = await runScenario(name, options);
    if (values.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else process.stdout.write(`${formatSummary(summary)}\n${timelines(timeline)}`);
  } catch (error) {
    if (isUnreachable(error)) {
      // The MCP fetch notes the URL it could not reach; otherwise it was a control call (global fetch).
      if (unreachableUrl !== undefined) throw unreachable(unreachableUrl, error);
      throw controlUnreachable(error);
    }
    // The raw client's first request: the URL answers, but not as an MCP endpoint.
    if (error instanceof Error && error.message.startsWith('initialize answered')) {
      throw new UsageError(
        `run: ${serverUrl} is not a lab MCP endpoint: ${error.message.split('\n')[0]!.slice(0, 200)} (--server)`,
      );
    }
    throw error;
  } finally {
    await local?.close();
  }
}

function controlUnreachable(error: unknown): UsageError {
  return new UsageError(
    `run: cannot reach the lab's control endpoint at ${runControlUrl ?? '-'} (${unreachableReason(error)}); it answers loopback clients only (--control)`,
  );
}

function unreachable(target: string, error?: unknown): UsageError {
  const code = error === undefined ? '' : ` (${unreachableReason(error)})`;
  return new UsageError(
    `run: cannot reach the lab server at ${target}${code}; is \`resumewatch-lab server\` running there? (--server, --control)`,
  );
}

/** One progress line of a load run, on stderr so that stdout stays the report. */
function progressLine(r: Readonly<LoadReport>, durationS: number): string {
  const elapsed = Math.min(durationS, Math.round(r.durationMs / 1000));
  return `resumewatch-lab: ${elapsed}/${durationS} s  ${r.runs} run(s), ${r.failures} failure(s), ${r.terminalDeliveries} terminal deliveries, ${r.reconnects} reconnect(s)\n`;
}

function timelines(timeline: RunTimeline): string {
  const wrong = timeline.wentWrong();
  if (wrong.length === 0) return '';
  return `\n${wrong.map(formatRequestTimeline).join('\n\n')}\n`;
}

async function demo(args: string[]): Promise<void> {
  const { values } = parse('demo', args, 0);
  if (values.help) return void process.stdout.write(commandHelp('demo'));
  const server = await startLabServer();
  const timeline = new RunTimeline();
  try {
    process.stdout.write(`lab server on ${server.url}; running seed-loop\n\n`);
    const summary = await runScenario('seed-loop' satisfies ScenarioName, {
      serverUrl: server.url,
      controlUrl: server.controlUrl,
      fetch: timeline.wrap(noteUnreachable),
    });
    process.stdout.write(`${formatSummary(summary)}\n${timelines(timeline)}`);
  } finally {
    await server.close();
  }
}

async function main(argv: string[]): Promise<'serving' | void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'server':
      return serve(rest);
    case 'run':
      return run(rest);
    case 'demo':
      return demo(rest);
    case 'scenarios': {
      const { values } = parse('scenarios', rest, 0);
      process.stdout.write(values.help ? commandHelp('scenarios') : `${SCENARIO_NAMES.join('\n')}\n`);
      return;
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(usage());
      return;
    default:
      throw new UsageError(`unknown command "${command}"; one of ${Object.keys(COMMANDS).join(', ')}`);
  }
}

/** The error as one line on stderr; returns the exit code: 2 for the user's input, 1 for anything else. */
function report(error: unknown): number {
  if (error instanceof UsageError) {
    process.stderr.write(`resumewatch-lab: ${error.message}\n`);
    return 2;
  }
  if (isUnreachable(error)) {
    // A promise a scenario left unawaited (a control call): still the one-line answer.
    return report(unreachableUrl !== undefined ? unreachable(unreachableUrl, error) : controlUnreachable(error));
  }
  // Not the user's mistake: still one line; the stack only on request.
  const debug = process.env.RESUMEWATCH_DEBUG === '1';
  const text =
    error instanceof Error
      ? debug
        ? (error.stack ?? error.message)
        : `${error.name}: ${error.message.split('\n')[0]} (RESUMEWATCH_DEBUG=1 prints the stack)`
      : String(error);
  process.stderr.write(`resumewatch-lab: ${text}\n`);
  return 1;
}

// A scenario may start a control call it awaits later; if that rejects first, Node would print the raw error.
process.on('unhandledRejection', (error) => process.exit(report(error)));

main(process.argv.slice(2)).then(
  (state) => {
    if (state === 'serving') return;
    // Let the process end on its own, so exit hooks (an OpenTelemetry register hook's flush) run; a
    // stray handle must not keep it alive for long.
    process.exitCode = 0;
    setTimeout(() => process.exit(), 10_000).unref();
  },
  (error: unknown) => {
    process.exitCode = report(error);
    setTimeout(() => process.exit(), 10_000).unref();
  },
);
