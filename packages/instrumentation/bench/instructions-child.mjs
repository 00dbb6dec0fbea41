/**
 * One client of instructions.bench.ts, in plain JavaScript over the packages' built `dist` (as an
 * application runs them): under valgrind, tsx's loader (hooks on a worker thread, every module through
 * them) tripled the instructions of a child's start-up and so its minutes, not the measured part.
 *
 * The unmodified SDK 1.x client calls the lab's `stream_progress` tool: `--warm` calls, then `--runs`
 * times `--calls` calls between two process.cpuUsage() calls (libuv's uv_getrusage, where callgrind
 * dumps its counts: the header of instructions.bench.ts). `--variant`: bare, guard (guardedFetch() as
 * an application installs it) or instrumented (instrumentFetch() with spans through the OpenTelemetry
 * SDK, a BatchSpanProcessor and an exporter that drops them, flushed inside the measured part). Prints
 * `{"cpuPerEvent":[...]}`, the process's CPU per SSE event of each run, in µs.
 *
 *   node bench/instructions-child.mjs --url URL --variant bare [--calls 10] [--progress 100] [--warm 5] [--runs 1]
 */
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { guardedFetch } from '@resumewatch/guard';
import { instrumentFetch } from '../dist/index.js';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    variant: { type: 'string' },
    calls: { type: 'string', default: '10' },
    progress: { type: 'string', default: '100' },
    warm: { type: 'string', default: '5' },
    runs: { type: 'string', default: '1' },
    'await-go': { type: 'boolean', default: false },
  },
});
const CALLS = Number(values.calls);
const PROGRESS = Number(values.progress);
const WARM = Number(values.warm);
const RUNS = Number(values.runs);
const EVENTS = CALLS * (PROGRESS + 1);
const variant = values.variant;
if (!['bare', 'guard', 'instrumented'].includes(variant)) throw new Error(`unknown variant ${variant}`);

let exported = 0;
const exporter = {
  export(spans, done) {
    exported += spans.length;
    done({ code: 0 });
  },
  shutdown: async () => undefined,
};
const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] });
const fetch =
  variant === 'guard'
    ? guardedFetch()
    : variant === 'instrumented'
      ? instrumentFetch({ tracerProvider: provider })
      : undefined;
const client = new Client({ name: 'bench', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(values.url), fetch ? { fetch } : {}));
let progress = 0;
const calls = async (n) => {
  for (let i = 0; i < n; i++)
    await client.callTool({ name: 'stream_progress', arguments: { count: PROGRESS, delay: 0 } }, undefined, {
      onprogress: () => void progress++,
    });
  if (variant === 'instrumented') await provider.forceFlush();
};
await calls(WARM);
if (values['await-go']) await warmAndWaiting();
const cpuPerEvent = [];
for (let r = 0; r < RUNS; r++) {
  // These two process.cpuUsage() calls are the only ones of the measured part: callgrind dumps its
  // counts before each.
  const start = process.cpuUsage();
  await calls(CALLS);
  const used = process.cpuUsage(start);
  cpuPerEvent.push((used.user + used.system) / EVENTS);
}
if (progress !== (WARM + RUNS * CALLS) * PROGRESS) throw new Error(`${variant}: ${progress} progress notifications`);
if (variant === 'instrumented' && exported === 0) throw new Error('instrumentFetch recorded no span');
await client.close();
await provider.shutdown();
console.log(JSON.stringify({ cpuPerEvent }));

/**
 * Says `warm` and waits for a line `go` on stdin: meanwhile the parent switches callgrind's
 * instrumentation on (callgrind_control, through valgrind's gdbserver), which runs uninstrumented up to
 * here, three times as fast. A timer ticks meanwhile, so that valgrind, which polls for the command
 * while the program runs, does not wait for a blocked system call to end.
 */
function warmAndWaiting() {
  return new Promise((resolve) => {
    const tick = setInterval(() => undefined, 5);
    let input = '';
    const onData = (chunk) => {
      input += chunk.toString();
      if (!input.includes('go\n')) return;
      clearInterval(tick);
      process.stdin.off('data', onData);
      process.stdin.destroy();
      resolve();
    };
    process.stdin.on('data', onData);
    process.stdout.write('warm\n');
  });
}
