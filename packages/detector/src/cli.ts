#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { ConfigError, OPTION_SPECS, configArgs, resolveConfig, type ResumewatchConfig } from './config.js';
import { AnalyzeInputError, analyzeFiles, formatSummary } from './doors/analyze.js';
import { startServer } from './doors/serve.js';

const USAGE = `Usage:
  resumewatch serve [options]           OTLP receivers (HTTP POST /v1/traces, gRPC) and /metrics, /healthz, /findings
  resumewatch analyze [--json] FILE...  detect over recorded OTLP/JSON (one request per line, or one document; - for stdin)
  resumewatch --help

analyze exits 0 when there is no finding, 1 when there is one, 2 on bad input or usage.
Findings are written to stdout as one JSON object a line (serve, analyze --json).

Options (flag, environment variable, default):
${OPTION_SPECS.map((s) => `  --${s.flag.padEnd(18)} ${s.env.padEnd(30)} ${s.help}`).join('\n')}
Durations take ms, s, m or h (a bare number is seconds).
`;

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { ...configArgs(), help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' } },
    });
  } catch (e) {
    process.stderr.write(`resumewatch: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const [command, ...rest] = positionals;
  let config: ResumewatchConfig;
  try {
    config = resolveConfig(values);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`resumewatch: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  if (command === 'serve' && rest.length === 0) return serve(config);
  if (command === 'analyze' && rest.length > 0) return analyze(config, rest, values.json === true);
  process.stderr.write(command === undefined ? USAGE : `resumewatch: bad usage of "${command}"\n\n${USAGE}`);
  return 2;
}

async function serve(config: ResumewatchConfig): Promise<number> {
  const server = await startServer(config);
  process.stderr.write(
    `resumewatch: OTLP/HTTP on http://${server.host}:${server.httpPort}/v1/traces` +
      (server.grpcPort !== undefined ? `, OTLP/gRPC on ${server.host}:${server.grpcPort}` : '') +
      `, metrics on http://${server.host}:${server.metricsPort}/metrics\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = (): void => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  process.stderr.write('resumewatch: shutting down\n');
  await server.close();
  return 0;
}

async function analyze(config: ResumewatchConfig, files: string[], json: boolean): Promise<number> {
  try {
    const result = await analyzeFiles(files, config);
    if (json) process.stdout.write(result.findings.map((f) => JSON.stringify(f) + '\n').join(''));
    else process.stdout.write(formatSummary(result));
    return result.findings.length > 0 ? 1 : 0;
  } catch (e) {
    if (e instanceof AnalyzeInputError) {
      process.stderr.write(`resumewatch: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`resumewatch: ${(e as Error).stack ?? String(e)}\n`);
    process.exitCode = 2;
  },
);
