#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { runDemo } from './demo.js';
import { formatRun } from './format.js';

const USAGE = `resumewatch-demo: the MCP resumption failure detected, then prevented, against a lab server on loopback

usage: resumewatch-demo [--json]`;

async function main(): Promise<void> {
  let json = false;
  try {
    const { values } = parseArgs({ options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
    if (values.help) {
      process.stdout.write(`${USAGE}\n`);
      return;
    }
    json = values.json ?? false;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  const runs = await runDemo();
  if (json) {
    process.stdout.write(`${JSON.stringify(runs)}\n`);
    return;
  }
  process.stdout.write(runs.map(formatRun).join('\n'));
}

main().catch((error: unknown) => {
  process.stderr.write(`resumewatch-demo: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
