/** The lab CLI's commands and flags: one table drives parsing, validation and every --help. */
import { parseArgs } from 'node:util';
import { UsageError } from './cli-errors.js';
import { SCENARIO_CLIENTS } from './scenarios/sdk-clients.js';
import { SCENARIO_NAMES } from './scenarios/summary.js';

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
export const scenarioList = (): string => SCENARIO_NAMES.join(', ');

export const COMMANDS: Record<string, Command> = {
  server: {
    args: '[options]',
    summary: 'a long-lived lab MCP server (endpoint /mcp, loopback-only control endpoint /control)',
    flags: [
      { name: 'port', value: 'P', default: '0 (a free port)', help: 'port to listen on, 0-65535' },
      {
        name: 'host',
        value: 'H',
        default: '127.0.0.1',
        help: 'address to listen on; 0.0.0.0 serves MCP to other hosts',
      },
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
      {
        name: 'server',
        value: 'URL',
        default: 'a lab server started in-process',
        help: "the lab server's MCP endpoint",
      },
      {
        name: 'control',
        value: 'URL',
        default: "/control on the server's origin",
        help: 'the control endpoint (answers loopback clients only)',
      },
      { name: 'json', default: 'off', help: 'print the summary (or the load report) as one JSON object' },
      { name: 'max-reconnects', value: 'N', default: '20', help: 'safety cap of the looping clients' },
      {
        name: 'result-wait',
        value: 'MS',
        default: '3000',
        help: 'how long a client waits on a stream for a result that may never come (resume-loses-result: at least 5000)',
      },
      {
        name: 'client',
        value: SCENARIO_CLIENTS.join('|'),
        default: 'raw',
        help: "the MCP client: the lab's own, or the unmodified SDK 1.x or v2 client (scenarios that run with them)",
      },
      {
        name: 'clients',
        value: 'N',
        default: '1 (with --duration)',
        help: 'load: N clients run the scenario back to back',
      },
      { name: 'duration', value: 'S', default: '10 (with --clients)', help: 'load: seconds to run' },
      {
        name: 'progress',
        value: 'S',
        default: '5',
        help: 'load: seconds between progress lines on stderr; 0 for none',
      },
    ],
    notes: `scenarios: ${scenarioList()}`,
  },
  demo: { args: '', summary: 'seed-loop against a lab server of its own, with its timeline', flags: [] },
  scenarios: { args: '', summary: 'list the scenarios', flags: [] },
};

export function commandHelp(name: string): string {
  const command = COMMANDS[name]!;
  const flags = [...command.flags, { name: 'help', help: 'this help' }];
  const rows = flags.map((f) => {
    const left = `--${f.name}${f.value ? ` ${f.value}` : ''}`;
    return `  ${left.padEnd(22)} ${f.help}${f.default !== undefined ? ` (default: ${f.default})` : ''}`;
  });
  return (
    [
      `usage: resumewatch-lab ${name}${command.args ? ` ${command.args}` : ''}`,
      '',
      command.summary,
      '',
      'options:',
      ...rows,
      ...(command.notes ? ['', command.notes] : []),
    ].join('\n') + '\n'
  );
}

export function usage(): string {
  const rows = Object.entries(COMMANDS).map(
    ([name, c]) => `  resumewatch-lab ${`${name} ${c.args}`.padEnd(30)} ${c.summary}`,
  );
  return (
    [
      'resumewatch-lab: the MCP Streamable HTTP resumption failure, reproduced on the real SDK',
      '',
      'usage:',
      ...rows,
      '',
      `scenarios: ${scenarioList()}`,
      "`resumewatch-lab <command> --help` lists the command's options and their defaults.",
    ].join('\n') + '\n'
  );
}

/** Parses a subcommand's flags; unknown flags, missing values and stray arguments are usage errors. */
export function parse(
  name: string,
  args: string[],
  positionals: number,
): { values: Record<string, string | boolean | undefined>; positionals: string[] } {
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

export function integer(values: Record<string, unknown>, name: string, min = 0): number | undefined {
  const value = values[name];
  if (typeof value !== 'string') return undefined;
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isInteger(parsed) || parsed < min) {
    throw new UsageError(`--${name} must be an integer of at least ${min}, got "${value}"`);
  }
  return parsed;
}

export function port(values: Record<string, unknown>): number {
  const value = integer(values, 'port');
  if (value !== undefined && value > 65535)
    throw new UsageError(`--port must be a port number 0-65535, got "${values.port as string}"`);
  return value ?? 0;
}

export function url(values: Record<string, unknown>, name: string): string | undefined {
  const value = values[name];
  if (typeof value !== 'string') return undefined;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new UsageError(`--${name} is not a URL: "${value}" (e.g. http://127.0.0.1:8080/mcp)`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new UsageError(`--${name} must be an http(s) URL, got "${value}"`);
  return value;
}
