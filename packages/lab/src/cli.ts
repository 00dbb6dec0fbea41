#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { startLabServer } from './lab-server.js';
import type { LabServer } from './lab-server.js';
import { runLoad } from './load.js';
import { runScenario, scenarioClients } from './scenarios/index.js';
import { SCENARIO_CLIENTS, isScenarioClient } from './scenarios/sdk-clients.js';
import { SCENARIO_NAMES, formatSummary, isScenarioName } from './scenarios/summary.js';

const USAGE = `resumewatch-lab: the MCP Streamable HTTP resumption failure, reproduced on the real SDK

usage:
  resumewatch-lab server [--port P] [--host H] [--capacity N] [--ttl-ms MS] [--replay-limit K] [--retry-ms MS]
  resumewatch-lab run <scenario> [--server URL] [--control URL] [--json] [--max-reconnects N]
                                 [--clients N --duration S] [--client ${SCENARIO_CLIENTS.join('|')}]
  resumewatch-lab demo
  resumewatch-lab scenarios

scenarios: ${SCENARIO_NAMES.join(', ')}
Without --server, run starts a lab server in-process. The control endpoint is /control on the
server's origin unless --control is given; it only answers loopback clients.`;

function fail(message: string): never {
  process.stderr.write(`${message}\n\n${USAGE}\n`);
  process.exit(2);
}

function integer(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) fail(`--${name} must be a non-negative integer, got ${value}`);
  return parsed;
}

async function serve(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      capacity: { type: 'string' },
      'ttl-ms': { type: 'string' },
      'replay-limit': { type: 'string' },
      'retry-ms': { type: 'string' },
    },
  });
  const eventStore: Record<string, number> = {};
  const capacity = integer(values.capacity, 'capacity');
  const ttlMs = integer(values['ttl-ms'], 'ttl-ms');
  const replayLimit = integer(values['replay-limit'], 'replay-limit');
  if (capacity !== undefined) eventStore.capacity = capacity;
  if (ttlMs !== undefined) eventStore.ttlMs = ttlMs;
  if (replayLimit !== undefined) eventStore.finishedStreamReplayLimit = replayLimit;
  const server = await startLabServer({
    port: integer(values.port, 'port') ?? 0,
    host: values.host ?? '127.0.0.1',
    eventStore,
    retryIntervalMs: integer(values['retry-ms'], 'retry-ms') ?? 100,
  });
  process.stdout.write(`resumewatch-lab server\n  MCP      ${server.url}\n  control  ${server.controlUrl} (loopback only)\n`);
  const stop = (): void => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

async function run(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      server: { type: 'string' },
      control: { type: 'string' },
      json: { type: 'boolean', default: false },
      clients: { type: 'string' },
      duration: { type: 'string' },
      'max-reconnects': { type: 'string' },
      client: { type: 'string' },
    },
  });
  const name = positionals[0];
  if (name === undefined || !isScenarioName(name)) fail(`unknown scenario ${name ?? '(none)'}`);
  if (values.client !== undefined && !isScenarioClient(values.client)) fail(`--client must be one of ${SCENARIO_CLIENTS.join(', ')}, got ${values.client}`);
  if (values.client !== undefined && !scenarioClients(name).includes(values.client)) fail(`scenario ${name} runs with: ${scenarioClients(name).join(', ')}`);
  let local: LabServer | undefined;
  const serverUrl = values.server ?? (local = await startLabServer()).url;
  const options = {
    serverUrl,
    ...(values.control !== undefined ? { controlUrl: values.control } : local ? { controlUrl: local.controlUrl } : {}),
    ...(values['max-reconnects'] !== undefined ? { maxReconnects: integer(values['max-reconnects'], 'max-reconnects')! } : {}),
    ...(values.client !== undefined ? { client: values.client } : {}),
  };
  try {
    if (values.clients !== undefined || values.duration !== undefined) {
      const report = await runLoad(name, {
        ...options,
        clients: integer(values.clients, 'clients') ?? 1,
        durationMs: (integer(values.duration, 'duration') ?? 10) * 1000,
      });
      process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : `${JSON.stringify(report, null, 2)}\n`);
      return;
    }
    const summary = await runScenario(name, options);
    process.stdout.write(values.json ? `${JSON.stringify(summary)}\n` : `${formatSummary(summary)}\n`);
  } finally {
    await local?.close();
  }
}

async function demo(): Promise<void> {
  const server = await startLabServer();
  try {
    process.stdout.write(`lab server on ${server.url}; running seed-loop\n\n`);
    const summary = await runScenario('seed-loop', { serverUrl: server.url, controlUrl: server.controlUrl });
    process.stdout.write(`${formatSummary(summary)}\n`);
  } finally {
    await server.close();
  }
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'server':
      return serve(rest);
    case 'run':
      return run(rest);
    case 'demo':
      return demo();
    case 'scenarios':
      process.stdout.write(`${SCENARIO_NAMES.join('\n')}\n`);
      return;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      return;
    default:
      fail(`unknown command ${command}`);
  }
}

main(process.argv.slice(2)).then(
  () => {
    if (process.argv[2] !== 'server') process.exit(0);
  },
  (error: unknown) => {
    process.stderr.write(`resumewatch-lab: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
