/** The detector CLI's commands and their help, built from the option table in config.ts. */
import { DEFAULT_CONFIG, OPTION_SPECS, type OptionSpec } from './config.js';
import { DEFAULT_DETECTOR_OPTIONS } from '@resumewatch/detector';

// Options come from config.ts's table, so a new option shows in the help (with its default) without an edit here.
// analyze runs the detector alone: it takes the detector's options (and the evidence caps of its HTML
// report), serve takes all of them.
export const isAnalyzeOption = (s: OptionSpec): boolean => s.key in DEFAULT_DETECTOR_OPTIONS || s.analyze === true;

export const COMMANDS = {
  serve: {
    args: '[options]',
    summary:
      'OTLP receivers (HTTP POST /v1/traces, gRPC) and, on the metrics port, the page (/: findings and their request\n' +
      'timelines), /metrics, /healthz, /findings; findings on stdout, one JSON object a line',
    specs: () => OPTION_SPECS,
    flags: [] as Array<[string, string]>,
  },
  analyze: {
    args: '[options] FILE...',
    summary:
      'detect over recorded OTLP/JSON: one export request a line (a Collector file exporter) or one document; - reads stdin.\n' +
      'Field names in lowerCamelCase or snake_case. Exit 0: no finding; 1: findings; 2: bad input or usage.',
    specs: () => OPTION_SPECS.filter(isAnalyzeOption),
    flags: [
      ['--json', 'write the findings as one JSON object a line instead of the readable summary'],
      [
        '--html FILE',
        'also write the page of the findings and their request timelines as one self-contained HTML file',
      ],
    ] as Array<[string, string]>,
  },
} as const;
export type CommandName = keyof typeof COMMANDS;

/** A default as the user would type it: durations with their unit, "off", "none". */
function formatDefault(spec: OptionSpec): string {
  if (spec.defaultText !== undefined) return spec.defaultText;
  const value = DEFAULT_CONFIG[spec.key] as unknown;
  if (value === undefined) return 'none';
  if (value === false) return 'off';
  if (spec.kind === 'duration' && typeof value === 'number') {
    for (const [unit, ms] of [
      ['h', 3_600_000],
      ['m', 60_000],
      ['s', 1000],
    ] as const)
      if (value >= ms && value % ms === 0) return `${value / ms}${unit}`;
    return `${value}ms`;
  }
  return String(value);
}

function optionRows(specs: readonly OptionSpec[]): string {
  const rows = specs.map(
    (s) => `  --${s.flag.padEnd(18)} ${s.env.padEnd(30)} ${s.help} (default: ${formatDefault(s)})`,
  );
  return [
    'Options (flag, environment variable, meaning and default):',
    ...rows,
    'Durations take ms, s, m or h (a bare number is seconds).',
  ].join('\n');
}

export function commandHelp(name: CommandName): string {
  const c = COMMANDS[name];
  const flags = c.flags.map(([f, h]) => `  ${f.padEnd(20)} ${h}`);
  return (
    [
      `Usage: resumewatch ${name} ${c.args}`,
      '',
      c.summary,
      '',
      ...(flags.length ? [...flags, ''] : []),
      optionRows(c.specs()),
    ].join('\n') + '\n'
  );
}

export const USAGE = `Usage:
  resumewatch serve [options]           ${COMMANDS.serve.summary.split(';')[0]}
  resumewatch analyze [--json] FILE...  detect over recorded OTLP/JSON (one request per line, or one document; - for stdin)
  resumewatch gateway --upstream URL    a reverse proxy in front of one MCP server: observes every client, --enforce stops the failure
  resumewatch <command> --help          the command's options, environment variables and defaults (or: resumewatch help <command>)

analyze exits 0 when there is no finding, 1 when there is one, 2 on bad input or usage.
Findings are written to stdout as one JSON object a line (serve, analyze --json).

${optionRows(OPTION_SPECS)}
(analyze takes the detector's options and the evidence caps: ${OPTION_SPECS.filter(isAnalyzeOption)
  .map((s) => `--${s.flag}`)
  .join(', ')}.)
`;

/** node:util's parse errors, cut to the part that names the flag. */
export function parseErrorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: string }).code;
  const flag = /'(-[^' ]+)/.exec(message)?.[1];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && flag) return `unknown flag ${flag}`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && flag)
    return message.includes('argument missing') ? `${flag} needs a value` : `${flag} takes no value`;
  return message.split('\n')[0]!;
}
