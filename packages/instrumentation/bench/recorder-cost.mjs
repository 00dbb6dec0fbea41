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
 *           manager, as a user would have (the spans' own cost included).
 *
 * Run each under callgrind with two call counts; the difference over the difference of calls is the
 * cost per call (warm: compilation falls in the first calls of both). `sdk` minus `wire` is what the
 * recorder and its spans add per call:
 *
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node bench/recorder-cost.mjs sdk 60 100
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node bench/recorder-cost.mjs sdk 240 100
 *
 * Needs the built packages (`npx tsc -b`). INSTRUMENTATION=<path to an index.js> counts another build
 * of this package (e.g. a copy of an older dist). Without valgrind it prints CPU ns per call.
 */
import { fileURLToPath } from 'node:url';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { WireObserver } from '@resumewatch/wire';

const INSTRUMENTATION = process.env.INSTRUMENTATION ?? fileURLToPath(new URL('../dist/index.js', import.meta.url));
const { instrumentFetch } = await import(INSTRUMENTATION);
const variant = process.argv[2] ?? 'sdk';
const CALLS = Number(process.argv[3] ?? 200);
const PROGRESS = Number(process.argv[4] ?? 100);
const WARM = Number(process.env.WARM ?? 20);
const CHUNK = 15708;
const SESSION = '972554df-c201-46ea-b7b6-74a87d072999';
const headers = new Headers([
  ['content-type', 'text/event-stream'],
  ['mcp-session-id', SESSION],
  ['cache-control', 'no-cache'],
]);
const STREAM = '254b2bb7-c638-4a5c-8e43-67cbedc40c2c';

function streamText(id) {
  let text = `id: b8d4ae80.3.${STREAM}\nretry: 100\ndata: \n\n`;
  for (let n = 1; n <= PROGRESS; n++)
    text += `event: message\nid: b8d4ae80.${n + 3}.${STREAM}\ndata: {"method":"notifications/progress","params":{"progressToken":${id},"progress":${n},"total":${PROGRESS}},"jsonrpc":"2.0"}\n\n`;
  text += `event: message\nid: b8d4ae80.${PROGRESS + 4}.${STREAM}\ndata: {"result":{"content":[{"type":"text","text":"streamed"}]},"jsonrpc":"2.0","id":${id}}\n\n`;
  return text;
}

let current = 1;
async function upstream() {
  const all = Buffer.from(streamText(current), 'latin1');
  const chunks = [];
  for (let at = 0; at < all.length; at += CHUNK) chunks.push(all.subarray(at, at + CHUNK));
  let i = 0;
  const body = new ReadableStream({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(chunks[i++]);
      else controller.close();
    },
  });
  return new Response(body, { status: 200, headers });
}

let exported = 0;
let provider;
if (variant === 'sdk' || variant === 'bare-sdk') {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const exporter = {
    export(spans, done) {
      exported += spans.length;
      done({ code: 0 });
    },
    shutdown: async () => undefined,
  };
  provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] });
  trace.setGlobalTracerProvider(provider);
}

const fetch =
  variant === 'wire'
    ? new WireObserver().addListener({ onEvent: () => undefined, eventsWanted: 'deciding' }).wrap(upstream)
    : variant === 'sdk' || variant === 'noop'
      ? instrumentFetch(upstream)
      : upstream;

async function call() {
  const id = ++current;
  const response = await fetch('http://127.0.0.1:1/mcp', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': SESSION,
      'mcp-protocol-version': '2025-06-18',
    },
    body: `{"method":"tools/call","params":{"name":"stream_progress","arguments":{"count":${PROGRESS},"delay":0},"_meta":{"progressToken":${id}}},"jsonrpc":"2.0","id":${id}}`,
  });
  const reader = response.body.getReader();
  for (;;) if ((await reader.read()).done) break;
}

for (let i = 0; i < WARM; i++) await call();
const start = process.cpuUsage();
for (let i = 0; i < CALLS; i++) await call();
await provider?.forceFlush();
const used = process.cpuUsage(start);
console.log(
  `${variant}: ${CALLS} calls of ${PROGRESS} events, ${(((used.user + used.system) * 1000) / CALLS).toFixed(0)} ns CPU per call` +
    (provider ? `, ${exported} spans exported` : ''),
);
await provider?.shutdown();
