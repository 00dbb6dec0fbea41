/**
 * The wire observer's own cost on a client's SSE path, counted in instructions (stable on a loaded
 * machine, unlike time): a fetch wrapped by a WireObserver with one deciding listener (as
 * instrumentFetch and guardedFetch have) against the same fetch unwrapped, over an in-process
 * upstream that answers each tools/call with `progress` progress events (each with an SDK-style
 * event-store id) and the result, in 15.7 KB chunks as the SDK's server writes them over loopback.
 * No network, no SDK: what is left is the observer's work per event and per request.
 *
 * Run it twice under callgrind with two call counts; the difference over the difference of events is
 * the cost per event (warm: compilation falls in the first calls of both):
 *
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node bench/observer-cost.mjs wire 10 1000
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node bench/observer-cost.mjs wire 40 1000
 *   (and `bare` for the same without the observer; `wire 100 0` and `wire 400 0` for a request's own cost)
 *
 * Without valgrind it prints CPU ns per event, which this shared machine scatters widely.
 * WIRE=<path to an index.js> compares another build of the package (e.g. a copy of an older dist).
 */
import { fileURLToPath } from 'node:url';

const WIRE = process.env.WIRE ?? fileURLToPath(new URL('../dist/index.js', import.meta.url));
const { WireObserver } = await import(WIRE);
const variant = process.argv[2] ?? 'wire';
const CALLS = Number(process.argv[3] ?? 200);
const PROGRESS = Number(process.argv[4] ?? 1000);
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

const fetch =
  variant === 'wire'
    ? new WireObserver().addListener({ onEvent: () => undefined, eventsWanted: 'deciding' }).wrap(upstream)
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
const used = process.cpuUsage(start);
const events = CALLS * (PROGRESS + 2);
console.log(
  `${variant}: ${events} events, ${(((used.user + used.system) * 1000) / events).toFixed(0)} ns CPU per event`,
);
