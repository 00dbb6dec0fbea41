#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { COMMANDS, USAGE, commandHelp, isAnalyzeOption, parseErrorText, type CommandName } from './cli-help.js';
import { ConfigError, OPTION_SPECS, configArgs, resolveConfig, type ResumewatchConfig } from './config.js';
import { AnalyzeInputError, analyzeFiles, formatSummary } from './doors/analyze.js';
import { startServer } from './doors/serve.js';
import { writeHtmlReport } from './page/report.js';
import type { Finding } from '@resumewatch/detector';
import { FindingRecord, ROUTE_METRICS, ROUTE_PAGE } from '@resumewatch/semconv';
import { unexpectedErrorLine } from './cli-error.js';

/** A usage or input error: one line on stderr, exit code 2. */
class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The gateway lives in its own package (it brings the instrumentation and the OpenTelemetry SDK): loaded when asked for. */
const GATEWAY_PACKAGE = '@resumewatch/gateway/cli';

async function gateway(argv: string[]): Promise<number> {
  let cli: { main(argv: string[]): Promise<number> };
  try {
    cli = (await import(GATEWAY_PACKAGE)) as typeof cli;
  } catch (e) {
    if (
      (e as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' &&
      String((e as Error).message).includes('@resumewatch/gateway')
    )
      throw new UsageError('the gateway is the package @resumewatch/gateway: npm install @resumewatch/gateway');
    throw e;
  }
  return cli.main(argv);
}

async function main(argv: string[]): Promise<number> {
  // The gateway has options of its own: the whole command line is its.
  if (argv[0] === 'gateway') return gateway(argv.slice(1));
  if (argv[0] === 'help' && argv[1] === 'gateway') return gateway(['--help']);
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        ...configArgs(),
        help: { type: 'boolean', short: 'h' },
        json: { type: 'boolean' },
        html: { type: 'string' },
      },
    });
  } catch (e) {
    throw new UsageError(`${parseErrorText(e)} (resumewatch --help lists the options)`);
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (command === 'help') {
    const topic = rest[0];
    if (topic !== undefined && !(topic in COMMANDS))
      throw new UsageError(`no help on "${topic}"; one of ${Object.keys(COMMANDS).join(', ')}`);
    process.stdout.write(topic === undefined ? USAGE : commandHelp(topic as CommandName));
    return 0;
  }
  if (command !== undefined && !(command in COMMANDS))
    throw new UsageError(`unknown command "${command}"; one of ${Object.keys(COMMANDS).join(', ')}`);
  if (values.help) {
    process.stdout.write(command === undefined ? USAGE : commandHelp(command as CommandName));
    return 0;
  }
  if (command === undefined) {
    process.stderr.write(USAGE);
    return 2;
  }
  let config: ResumewatchConfig;
  try {
    config = resolveConfig(values);
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(e.message);
    throw e;
  }
  if (command === 'serve') {
    if (rest.length > 0) throw new UsageError(`serve takes no file or argument, got "${rest[0]}"`);
    if (values.json) throw new UsageError('--json is an analyze flag; serve always writes findings as JSON lines');
    if (values.html !== undefined)
      throw new UsageError('--html is an analyze flag; serve shows the page on its metrics port (/)');
    return serve(config);
  }
  const serveOnly = OPTION_SPECS.find(
    (s) => !isAnalyzeOption(s) && (values as Record<string, unknown>)[s.flag] !== undefined,
  );
  if (serveOnly)
    throw new UsageError(
      `--${serveOnly.flag} is a serve option; analyze takes ${OPTION_SPECS.filter(isAnalyzeOption)
        .map((s) => `--${s.flag}`)
        .join(', ')}, --json`,
    );
  if (rest.length === 0) throw new UsageError('analyze needs a FILE (an OTLP/JSON export, or - for stdin)');
  if (values.html === '') throw new UsageError('--html needs a FILE to write the report to');
  return analyze(config, rest, values.json === true, values.html);
}

/** Two listeners on one port fail half-way with EADDRINUSE; say which flags collide instead. */
function checkPorts(config: ResumewatchConfig): void {
  const ports: Array<[string, number | false]> = [
    ['--port', config.port],
    ['--grpc-port', config.grpcPort],
    ['--metrics-port', config.metricsPort],
  ];
  for (let i = 0; i < ports.length; i++) {
    for (let j = i + 1; j < ports.length; j++) {
      const [a, p] = ports[i]!;
      const [b, q] = ports[j]!;
      if (p !== false && p !== 0 && p === q)
        throw new UsageError(`${a} and ${b} are both ${p}; each listener needs its own port`);
    }
  }
}

/** One line for a listener that could not start: which port or host, and which flag sets it. */
function listenError(e: unknown, config: ResumewatchConfig): UsageError | undefined {
  const err = e as { code?: string; port?: number; message?: string };
  const text = String(err.message ?? '');
  const code =
    err.code && /^E[A-Z]+$/.test(err.code)
      ? err.code
      : /\b(EADDRINUSE|EACCES|EADDRNOTAVAIL|ENOTFOUND)\b/.exec(text)?.[1];
  if (code === undefined) return undefined;
  const port = err.port;
  const flag = port === config.port ? '--port' : port === config.metricsPort ? '--metrics-port' : '--grpc-port';
  switch (code) {
    case 'EADDRINUSE':
      return new UsageError(
        `port ${port} on ${config.host} is in use (${flag}); stop what listens there or choose another port`,
      );
    case 'EACCES':
      return new UsageError(
        `not allowed to listen on port ${port} on ${config.host} (${flag}; ports below 1024 need privileges)`,
      );
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
      return new UsageError(`cannot listen on host ${config.host}: no such local address (--host)`);
    default:
      return undefined;
  }
}

async function serve(config: ResumewatchConfig): Promise<number> {
  checkPorts(config);
  let server;
  try {
    server = await startServer(config);
  } catch (e) {
    throw listenError(e, config) ?? e;
  }
  process.stderr.write(
    `resumewatch: OTLP/HTTP on http://${server.host}:${server.httpPort}/v1/traces` +
      (server.grpcPort !== undefined ? `, OTLP/gRPC on ${server.host}:${server.grpcPort}` : '') +
      `, metrics on http://${server.host}:${server.metricsPort}${ROUTE_METRICS}` +
      `, the page on http://${server.host}:${server.metricsPort}${ROUTE_PAGE}\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = (): void => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  process.stderr.write('resumewatch: shutting down\n');
  await server.close();
  // The state is on disk and every listener closed. A write to a stdout nobody reads would keep Node
  // alive for good (it cannot be cancelled): give the reader a moment to drain, then exit.
  if (process.stdout.writableLength > 0) {
    await new Promise<void>((resolve) => {
      process.stdout.once('drain', resolve);
      setTimeout(resolve, STDOUT_DRAIN_MS).unref();
    });
  }
  process.exit(0);
}

/** How long a graceful stop waits for stdout's reader to take what is still buffered. */
const STDOUT_DRAIN_MS = 2_000;

async function analyze(
  config: ResumewatchConfig,
  files: string[],
  json: boolean,
  html: string | undefined,
): Promise<number> {
  try {
    const result = html === undefined ? await analyzeFiles(files, config) : await writeHtmlReport(html, files, config);
    if (html !== undefined) process.stderr.write(`resumewatch: report written to ${html}\n`);
    if (json) process.stdout.write(result.findings.map((f) => JSON.stringify(f) + '\n').join(''));
    else process.stdout.write(formatSummary(result));
    return standingFindings(result.findings) > 0 ? 1 : 0;
  } catch (e) {
    if (e instanceof AnalyzeInputError) throw new UsageError(e.message);
    throw e;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    if (e instanceof UsageError) {
      process.stderr.write(`resumewatch: ${e.message}\n`);
      process.exitCode = 2;
      return;
    }
    // Not the user's mistake: still one line; the stack only on request.
    process.stderr.write(`resumewatch: ${unexpectedErrorLine(e)}\n`);
    process.exitCode = 2;
  },
);

/** Findings not taken back by a later retraction of the same (service, session, request, kind). */
function standingFindings(lines: readonly Finding[]): number {
  const key = (f: Finding): string => `${f.service}\n${f.session_id}\n${f.request_id}\n${f.kind}`;
  const retracted = new Set(lines.filter((f) => f.record === FindingRecord.RETRACTION).map(key));
  return lines.filter((f) => f.record === undefined && !retracted.has(key(f))).length;
}
