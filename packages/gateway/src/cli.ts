import { parseArgs } from 'node:util';
import { ConfigError } from '@resumewatch/daemon';
import { IdPolicyError } from '@resumewatch/instrumentation';
import { GATEWAY_OPTION_SPECS, SHARED_OPTION_SPECS, gatewayArgs, resolveGatewayConfig } from './config.js';
import { startGateway } from './gateway.js';
import { registerGatewayTraceContext } from './trace-context.js';

export const GATEWAY_HELP = `Usage: resumewatch gateway --upstream URL [options]

A reverse proxy for MCP Streamable HTTP in front of one MCP server: every exchange of every client
passes unchanged and is observed; the built-in detector's findings go to stdout (one JSON object a
line) and to /findings, its metrics to /metrics, on --metrics-port. With --enforce, a resume of a
request whose result was delivered is answered 405 and a replay of a delivered result is removed.
With OTEL_EXPORTER_OTLP_ENDPOINT set, the spans are exported over OTLP/HTTP too. A request whose Host
(or Origin) is not allowed is answered 403 on both ports (DNS rebinding); the client's Host goes
upstream in X-Forwarded-Host and Forwarded.

Options (flag, environment variable, meaning and default):
${GATEWAY_OPTION_SPECS.map((s) => `  --${(s.kind === 'boolean' ? s.flag : `${s.flag} V`).padEnd(24)} ${s.env.padEnd(38)} ${s.help} (default: ${s.default})`).join('\n')}
${SHARED_OPTION_SPECS.map((s) => `  --${`${s.flag} V`.padEnd(24)} ${s.env.padEnd(38)} ${s.help} (${s.defaultText !== undefined ? `default: ${s.defaultText}` : "as serve's"})`).join('\n')}
Durations take ms, s, m or h (a bare number is seconds).
`;

/** A usage or input error: one line on stderr, exit code 2. */
class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** `resumewatch gateway …` (and `resumewatch-gateway …`): runs until SIGTERM or SIGINT; returns the exit code. */
export async function main(
  argv: string[],
  io: { stdout?: NodeJS.WritableStream; stderr?: NodeJS.WritableStream } = {},
): Promise<number> {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  try {
    return await run(argv, stdout, stderr);
  } catch (e) {
    if (e instanceof UsageError || e instanceof ConfigError || e instanceof IdPolicyError) {
      stderr.write(`resumewatch: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}

async function run(argv: string[], stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { ...gatewayArgs(), help: { type: 'boolean', short: 'h' } },
    });
  } catch (e) {
    throw new UsageError(`${(e as Error).message.split('\n')[0]} (resumewatch gateway --help lists the options)`);
  }
  if (parsed.values.help) {
    stdout.write(GATEWAY_HELP);
    return 0;
  }
  if (parsed.positionals.length > 0) throw new UsageError(`gateway takes no argument, got "${parsed.positionals[0]}"`);
  const { gateway: options, detector } = resolveGatewayConfig(parsed.values);
  if (options.port !== 0 && options.port === detector.metricsPort)
    throw new UsageError(`--port and --metrics-port are both ${options.port}; each listener needs its own port`);
  // The process is the gateway's: its request span is the client span's child and the upstream's
  // parent (W3C `traceparent`).
  registerGatewayTraceContext();
  let gateway;
  try {
    gateway = await startGateway({
      ...options,
      detector: { config: detector, output: stdout, log: (line) => stderr.write(`resumewatch: ${line}\n`) },
    });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { port?: number };
    if (err.code === 'EADDRINUSE')
      throw new UsageError(
        `port ${err.port} on ${detector.host} is in use (${err.port === detector.metricsPort ? '--metrics-port' : '--port'}); stop what listens there or choose another port`,
      );
    if (err.code === 'EACCES')
      throw new UsageError(
        `not allowed to listen on port ${err.port} on ${detector.host} (ports below 1024 need privileges)`,
      );
    if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND')
      throw new UsageError(`cannot listen on host ${detector.host}: no such local address (--host)`);
    throw e;
  }
  stderr.write(
    `resumewatch: gateway on ${gateway.url}${gateway.upstream.pathname} → ${gateway.upstream.href}` +
      `${gateway.enforce ? ' (enforcing)' : ' (observing)'}, metrics on http://${detector.host}:${gateway.detector!.metricsPort}/metrics\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  stderr.write('resumewatch: shutting down\n');
  // What the wire observer holds: kept in --state-file for the next process, else forgotten (said, so a restart's cost is seen).
  const { openRequests, sessions } = gateway.stats();
  if (openRequests > 0 || sessions > 0)
    stderr.write(
      detector.stateFile
        ? `resumewatch: keeping ${openRequests} requests awaiting their result and ${sessions} sessions observed in ${detector.stateFile}\n`
        : `resumewatch: forgetting ${openRequests} requests awaiting their result and ${sessions} sessions observed (the wire observer's state; --state-file keeps it)\n`,
    );
  await gateway.close();
  return 0;
}
