#!/usr/bin/env node
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULT_CONFIG, htmlReportOfSpans } from '@resumewatch/daemon';
import { runDemo } from './demo.js';
import { formatRun } from './format.js';

const USAGE = `resumewatch-demo: the MCP resumption failure detected, then prevented, against a lab server on loopback;
then its 2026-07-28 successor, a re-issued call, detected and made harmless by an idempotency key

usage: resumewatch-demo [--json]

options:
  --json    print the runs (guarded, summary, findings, timelines) as one JSON array (default: off)
  --help    this help`;

/** node:util's parse errors, cut to the part that names the flag. */
function parseErrorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const flag = /'(-[^' ]+)/.exec(message)?.[1];
  const code = (error as { code?: string }).code;
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && flag)
    return `unknown flag ${flag} (resumewatch-demo --help lists the options)`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && flag) return `${flag} takes no value`;
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
    return `unexpected argument ${/'([^']+)'/.exec(message)?.[1] ?? ''} (resumewatch-demo takes no arguments)`;
  return message.split('\n')[0]!;
}

async function main(): Promise<void> {
  let json: boolean;
  try {
    const { values } = parseArgs({ options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
    if (values.help) {
      process.stdout.write(`${USAGE}\n`);
      return;
    }
    json = values.json ?? false;
  } catch (error) {
    process.stderr.write(`resumewatch-demo: ${parseErrorText(error)}\n`);
    process.exitCode = 2;
    return;
  }
  if (!json)
    process.stderr.write(
      'resumewatch-demo: running seed-loop twice against a lab server on loopback, then modern-broken-reissue (2026-07-28)...\n',
    );
  const runs = await runDemo();
  if (json) {
    process.stdout.write(`${JSON.stringify(runs.map(({ spans: _spans, ...run }) => run))}\n`);
    return;
  }
  process.stdout.write(runs.map(formatRun).join('\n'));
  // The same runs as a picture: the page of `resumewatch serve`, written as one self-contained file.
  const report = join(tmpdir(), 'resumewatch-demo-report.html');
  const html = htmlReportOfSpans(
    runs.flatMap((r) => r.spans),
    DEFAULT_CONFIG,
    'resumewatch demo: the seed loop, then the guard; a 2026-07-28 re-issue',
  );
  await writeFile(report, html);
  process.stdout.write(`\nThe findings and each request's timeline, in your browser: ${pathToFileURL(report).href}\n`);
}

main().catch((error: unknown) => {
  // The demo itself failed: one line; the stack only on request.
  const debug = process.env.RESUMEWATCH_DEBUG === '1';
  const text =
    error instanceof Error
      ? debug
        ? (error.stack ?? error.message)
        : `${error.name}: ${error.message.split('\n')[0]} (RESUMEWATCH_DEBUG=1 prints the stack)`
      : String(error);
  process.stderr.write(`resumewatch-demo: ${text}\n`);
  process.exitCode = 1;
});
