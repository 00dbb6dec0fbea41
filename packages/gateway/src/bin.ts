#!/usr/bin/env node
import { main } from './cli.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // Streams of clients may still hold sockets in Node's keep-alive pool: the gateway is closed, so leave.
    if (code === 0) setImmediate(() => process.exit(code));
  },
  (e: unknown) => {
    const debug = process.env.RESUMEWATCH_DEBUG === '1';
    const text =
      e instanceof Error
        ? debug
          ? (e.stack ?? e.message)
          : `${e.name}: ${e.message.split('\n')[0]} (RESUMEWATCH_DEBUG=1 prints the stack)`
        : String(e);
    process.stderr.write(`resumewatch: ${text}\n`);
    process.exitCode = 2;
  },
);
