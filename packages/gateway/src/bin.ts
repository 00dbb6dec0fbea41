#!/usr/bin/env node
import { unexpectedErrorLine } from '@resumewatch/daemon';
import { main } from './cli.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // Streams of clients may still hold sockets in Node's keep-alive pool: the gateway is closed, so leave.
    if (code === 0) setImmediate(() => process.exit(code));
  },
  (e: unknown) => {
    process.stderr.write(`resumewatch: ${unexpectedErrorLine(e)}\n`);
    process.exitCode = 2;
  },
);
