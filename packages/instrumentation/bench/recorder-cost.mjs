/**
 * The span recorder's cost on a client's SSE path, counted in instructions (stable on a loaded machine,
 * unlike time): the same in-process upstream as packages/wire/bench/observer-cost.mjs (each tools/call
 * answered with `progress` progress events, SDK-style event-store ids, 15.7 KB chunks), fetched
 *
 *   bare    unwrapped;
 *   wire    through a WireObserver with one deciding listener that does nothing (the observer alone);
 *   noop    through instrumentFetch with no tracer provider registered (the API's no-op spans: the
 *           recorder's own bookkeeping);
 *   bare-sdk  unwrapped, with the SDK of `sdk` registered (what OpenTelemetry costs the bare client);
 *   sdk     through instrumentFetch with an OpenTelemetry SDK BasicTracerProvider, a
 *           BatchSpanProcessor and an exporter that drops the spans, with the async-hooks context
 *           manager, as a user would have (the spans' own cost included);
 *   sdk-simple, sdk-none, sdk-nocm  `sdk` with one part changed: a SimpleSpanProcessor, no span
 *           processor, no context manager (see below);
 *   guard   through guardedFetch.
 *
 * Run each under callgrind with two call counts; the difference over the difference of calls is the
 * cost per call (warm: compilation falls in the first calls of both). `sdk` minus `wire` is what the
 * recorder and its spans add per call:
 *
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node bench/recorder-cost.mjs sdk 60 100
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node bench/recorder-cost.mjs sdk 240 100
 *
 * Whole-process counts carry start-up, whose count moves by tens of millions from run to run. With
 * MARK=100 and `--dump-before=uv_getrusage`, callgrind writes one part per 100 measured calls (see MARK
 * below) and the measured calls are counted alone; run node with `--single-threaded` so that the
 * collector and the compilers work on the main thread, and bench/callgrind-kinds.ts's split of a part
 * (collector, compilers, the rest) adds up:
 *
 *   MARK=100 valgrind --tool=callgrind --dump-before=uv_getrusage --callgrind-out-file=/tmp/sdk.%p \
 *     node --single-threaded bench/recorder-cost.mjs sdk 600 100
 *
 * Needs the built packages (`npx tsc -b`). INSTRUMENTATION=<path to an index.js> counts another build
 * of this package (e.g. a copy of an older dist). Without valgrind it prints CPU ns per call.
 */
import { fileURLToPath } from 'node:url';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, BatchSpanProcessor, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { guardedFetch } from '@resumewatch/guard';
import { WireObserver } from '@resumewatch/wire';
import { progressUpstream } from '../../wire/bench/progress-upstream.mjs';

const INSTRUMENTATION = process.env.INSTRUMENTATION ?? fileURLToPath(new URL('../dist/index.js', import.meta.url));
const { instrumentFetch } = await import(INSTRUMENTATION);
const variant = process.argv[2] ?? 'sdk';
const CALLS = Number(process.argv[3] ?? 200);
const PROGRESS = Number(process.argv[4] ?? 100);
const WARM = Number(process.env.WARM ?? 20);
const { upstream, call: callThrough } = progressUpstream(PROGRESS);

let exported = 0;
let provider;
// The SDK's parts, one left out at a time: `sdk-simple` a SimpleSpanProcessor (each span exported as it
// ends, no buffer or timer), `sdk-none` no span processor (spans made and ended, never exported),
// `sdk-nocm` no context manager (the API's no-op one: a context is passed, never stored per async resource).
const sdk = variant === 'bare-sdk' || variant.startsWith('sdk');
if (sdk) {
  if (variant !== 'sdk-nocm') context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const exporter = {
    export(spans, done) {
      exported += spans.length;
      done({ code: 0 });
    },
    shutdown: async () => undefined,
  };
  const spanProcessors =
    variant === 'sdk-none'
      ? []
      : [variant === 'sdk-simple' ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter)];
  provider = new BasicTracerProvider({ spanProcessors });
  trace.setGlobalTracerProvider(provider);
}

const fetch =
  variant === 'wire'
    ? new WireObserver().addListener({ onEvent: () => undefined, eventsWanted: 'deciding' }).wrap(upstream)
    : variant === 'guard'
      ? guardedFetch(upstream)
      : variant === 'noop' || (sdk && variant !== 'bare-sdk')
        ? instrumentFetch(upstream)
        : upstream;

const call = () => callThrough(fetch);

// MARK=n: process.cpuUsage() (libuv's uv_getrusage) every n measured calls as well as at the start and
// the end, so that `valgrind --tool=callgrind --dump-before=uv_getrusage` writes one part per n calls:
// the parts count the measured calls alone (start-up and warm-up are the first part), one by one.
const MARK = Number(process.env.MARK ?? 0);
for (let i = 0; i < WARM; i++) await call();
const start = process.cpuUsage();
for (let i = 0; i < CALLS; i++) {
  await call();
  if (MARK && (i + 1) % MARK === 0 && i + 1 < CALLS) process.cpuUsage();
}
await provider?.forceFlush();
const used = process.cpuUsage(start);
console.log(
  `${variant}: ${CALLS} calls of ${PROGRESS} events, ${(((used.user + used.system) * 1000) / CALLS).toFixed(0)} ns CPU per call` +
    (provider ? `, ${exported} spans exported` : ''),
);
await provider?.shutdown();
