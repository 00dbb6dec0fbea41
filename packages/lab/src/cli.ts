#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { UsageError, isUnreachable, listenErrorMessage, unreachableReason } from './cli-errors.js';
import { startLabServer } from './lab-server.js';
import type { LabServer } from './lab-server.js';
import { runLoad } from './load.js';
import type { LoadReport } from './load.js';
import type { FetchLike } from './mcp-http-client.js';
import { runScenario } from './scenarios/index.js';
import { SCENARIO_NAMES, formatSummary, isScenarioName } from './scenarios/summary.js';
import type { ScenarioName } from './scenarios/summary.js';
import { formatRequestTimeline } from './timeline-format.js';
import { RunTimeline } from './timeline.js';

/** One flag of a subcommand: parsed, validated and printed in its --help from this one row. */
interface Flag {
  name: string;
  /** Placeholder of the value; absent for a boolean flag. */
  value?: string;
  default?: string;
  help: string;
}

interface Command {
  args: string;
  summary: string;
  flags: Flag[];
  notes?: string;
}

// The scenario list comes from the lab's registry, so a new scenario shows up here without an edit.
const scenarioList = (): string => SCENARIO_NAMES.join(', ');

const COMMANDS: Record<string, Command> = {
  server: {
    args: '[options]',
    summary: 'a long-lived lab MCP server (endpoint /mcp, loopback-only control endpoint /control)',
    flags: [
      { name: 'port', value: 'P', default: '0 (a free port)', help: 'port to listen on, 0-65535' },
      { name: 'host', value: 'H', default: '127.0.0.1', help: 'address to listen on; 0.0.0.0 serves MCP to other hosts' },
      { name: 'capacity', value: 'N', default: '1000', help: 'events kept per session' },
      { name: 'ttl-ms', value: 'MS', default: '300000', help: 'event retention' },
      { name: 'replay-limit', value: 'K', default: '3', help: 'replays of a finished stream before it is evicted' },
      { name: 'retry-ms', value: 'MS', default: '100', help: 'retry: the server writes in priming events' },
    ],
  },
  run: {
    args: '<scenario> [options]',
    summary: 'run one scenario and print what the client saw, with the timeline of each request that went wrong',
    flags: [
      { name: 'server', value: 'URL', default: 'a lab server started in-process', help: "the lab server's MCP endpoint" },
      { name: 'control', value: 'URL', default: "/control on the server's origin", help: 'the control endpoint (answers loopback clients only)' },
      { name: 'json', default: 'off', help: 'print the summary (or the load report) as one JSON object' },
      { name: 'max-reconnects', value: 'N', default: '20', help: 'safety cap of the looping clients' },
      { name: 'clients', value: 'N', default: '1 (with --duration)', help: 'load: N clients run the scenario back to back' },
      { name: 'duration', value: 'S', default: '10 (with --clients)', help: 'load: seconds to run' },
      { name: 'progress', value: 'S', default: '5', help: 'load: seconds between progress lines on stderr; 0 for none' },
    ],
    notes: `scenarios: ${scenarioList()}`,
  },
  demo: { args: '', summary: 'seed-loop against a lab server of its own, with its timeline', flags: [] },
  scenarios: { args: '', summary: 'list the scenarios', flags: [] },
};

function commandHelp(name: string): string {
  const command = COMMANDS[name]!;
  const flags = [...command.flags, { name: 'help', help: 'this help' }];
  const rows = flags.map((f) => {
    const left = `--${f.name}${f.value ? ` ${f.value}` : ''}`;
    return `  ${left.padEnd(22)} ${f.help}${f.default !== undefined ? ` (default: ${f.default})` : ''}`;
  });
  return [`usage: resumewatch-lab ${name}${command.args ? ` ${command.args}` : ''}`, '', command.summary, '', 'options:', ...rows, ...(command.notes ? ['', command.notes] : [])].join('\n') + '\n';
}

function usage(): string {
  const rows = Object.entries(COMMANDS).map(([name, c]) => `  resumewatch-lab ${`${name} ${c.args}`.padEnd(30)} ${c.summary}`);
  return [
    'resumewatch-lab: the MCP Streamable HTTP resumption failure, reproduced on the real SDK',
    '',
    'usage:',
    ...rows,
    '',
    `scenarios: ${scenarioList()}`,
    "`resumewatch-lab <command> --help` lists the command's options and their defaults.",
  ].join('\n') + '\n';
}

/** Parses a subcommand's flags; unknown flags, missing values and stray arguments are usage errors. */
function parse(name: string, args: string[], positionals: number): { values: Record<string, string | boolean | undefined>; positionals: string[] } {
  const options: Record<string, { type: 'string' | 'boolean' }> = { help: { type: 'boolean' } };
  for (const f of COMMANDS[name]!.flags) options[f.name] = { type: f.value ? 'string' : 'boolean' };
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(`${name}: ${parseErrorText(error)}`);
  }
  if (!parsed.values.help && parsed.positionals.length > positionals) {
    throw new UsageError(`${name}: unexpected argument ${parsed.positionals[positionals]}`);
  }
  return parsed as { values: Record<string, string | boolean | undefined>; positionals: string[] };
}

/** node:util's parse errors, cut to the part that names the flag. */
function parseErrorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: string }).code;
  const flag = /'(-[^' ]+)/.exec(message)?.[1];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && flag) return `unknown flag ${flag}`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && flag) {
    return message.includes('argument missing') ? `${flag} needs a value` : `${flag} takes no value`;
  }
  return message.split('\n')[0]!;
}

function integer(values: Record<string, unknown>, name: string, min = 0): number | undefined {
  const value = values[name];
  if (typeof value !== 'string') return undefined;
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isInteger(parsed) || parsed < min) {
    throw new UsageError(`--${name} must be an integer of at least ${min}, got "${value}"`);
  }
  return parsed;
}

function port(values: Record<string, unknown>): number {
  const value = integer(values, 'port');
  if (value !== undefined && value > 65535) throw new UsageError(`--port must be a port number 0-65535, got "${values.port as string}"`);
  return value ?? 0;
}

function url(values: Record<string, unknown>, name: string): string | undefined {
  const value = values[name];
  if (typeof value !== 'string') return undefined;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new UsageError(`--${name} is not a URL: "${value}" (e.g. http://127.0.0.1:8080/mcp)`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`--${name} must be an http(s) URL, got "${value}"`);
  return value;
}

async function listenOrExplain(options: Parameters<typeof startLabServer>[0] & { host: string; port: number }): Promise<LabServer> {
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
  const server = await listenOrExplain({ port: port(values), host, eventStore, retryIntervalMs: integer(values, 'retry-ms') ?? 100 });
  process.stdout.write(`resumewatch-lab server\n  MCP      ${server.url}\n  control  ${server.controlUrl} (loopback only)\n`);
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
  const server = url(values, 'server');
  const control = url(values, 'control');
  const maxReconnects = integer(values, 'max-reconnects');
  const load = values.clients !== undefined || values.duration !== undefined;
  const clients = integer(values, 'clients', 1) ?? 1;
  const duration = integer(values, 'duration', 1) ?? 10;
  const progress = integer(values, 'progress') ?? 5;
  const local = server === undefined ? await startLabServer() : undefined;
  const serverUrl = server ?? local!.url;
  runControlUrl = control ?? local?.controlUrl ?? new URL('/control', serverUrl).toString();
  const timeline = new RunTimeline();
  const options = {
    serverUrl,
    fetch: load ? noteUnreachable : timeline.wrap(noteUnreachable),
    ...(control !== undefined ? { controlUrl: control } : local ? { controlUrl: local.controlUrl } : {}),
    ...(maxReconnects !== undefined ? { maxReconnects } : {}),
  };
  try {
    if (load) {
      process.stderr.write(`resumewatch-lab: ${name} with ${clients} client(s) for ${duration} s against ${serverUrl}\n`);
      const report = await runLoad(name, {
        ...options,
        clients,
        durationMs: duration * 1000,
        ...(progress > 0 ? { onProgress: (r: Readonly<LoadReport>) => process.stderr.write(progressLine(r, duration)), progressIntervalMs: progress * 1000 } : {}),
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
      throw new UsageError(`run: ${serverUrl} is not a lab MCP endpoint: ${error.message.split('\n')[0]!.slice(0, 200)} (--server)`);
    }
    throw error;
  } finally {
    await local?.close();
  }
}

function controlUnreachable(error: unknown): UsageError {
  return new UsageError(`run: cannot reach the lab's control endpoint at ${runControlUrl ?? '-'} (${unreachableReason(error)}); it answers loopback clients only (--control)`);
}

function unreachable(target: string, error?: unknown): UsageError {
  const code = error === undefined ? '' : ` (${unreachableReason(error)})`;
  return new UsageError(`run: cannot reach the lab server at ${target}${code}; is \`resumewatch-lab server\` running there? (--server, --control)`);
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
    const summary = await runScenario('seed-loop' satisfies ScenarioName, { serverUrl: server.url, controlUrl: server.controlUrl, fetch: timeline.wrap(noteUnreachable) });
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
  const text = error instanceof Error ? (debug ? (error.stack ?? error.message) : `${error.name}: ${error.message.split('\n')[0]} (RESUMEWATCH_DEBUG=1 prints the stack)`) : String(error);
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
