/**
 * The wire observer's cost per SSE event on a proxy's path (the gateway's: `proxyRequest`,
 * `proxyResponse`, the body pushed chunk by chunk into a sink), counted in instructions: one session,
 * `calls` tools/call streams of `events` progress notifications and the result, each event a chunk of
 * its own as bench/upstream-server.ts of the gateway writes them (one write an event). No network, no
 * HTTP: the observer's work per chunk and per event, and per stream.
 *
 * Run it twice under callgrind with two event counts; the difference over the difference of events
 * (calls × events) is the cost per event:
 *
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node bench/pushed-cost.mjs 20 500
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node bench/pushed-cost.mjs 20 3000
 *
 * WIRE=<path to an index.js> counts another build of the package (e.g. a copy of an older dist).
 */
import { fileURLToPath } from 'node:url';

const WIRE = process.env.WIRE ?? fileURLToPath(new URL('../dist/index.js', import.meta.url));
const { WireObserver } = await import(WIRE);
const CALLS = Number(process.argv[2] ?? 20);
const EVENTS = Number(process.argv[3] ?? 500);
const WARM = Number(process.env.WARM ?? 10);

// As the gateway's observation configures it (observation.ts), without the recorder: no listener wants a progress event.
const observer = new WireObserver({ releaseOnTransportClose: false, sessionlessApart: true, confirmDelivery: true });
const URL_ = 'http://127.0.0.1:1/mcp';
const sink = { enqueue: () => undefined };
const enc = new TextEncoder();
const post = (body, session) => ({
  method: 'POST',
  headers: [
    ['content-type', 'application/json'],
    ['accept', 'application/json, text/event-stream'],
    ...(session
      ? [
          ['mcp-session-id', session],
          ['mcp-protocol-version', '2025-06-18'],
        ]
      : []),
  ],
  body: enc.encode(body),
});
let nextId = 1;
const init = observer.proxyRequest(
  URL_,
  post(
    JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'b', version: '1' } },
    }),
  ),
  'c',
);
const initBody = observer.proxyResponse(
  init,
  200,
  { 'content-type': 'application/json', 'mcp-session-id': 's1' },
  true,
);
initBody.chunk(
  Buffer.from(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'u', version: '1' } },
    }),
  ),
  sink,
);
initBody.end(sink);

let nextStream = 1;
function call() {
  const id = nextId++;
  const request = observer.proxyRequest(
    URL_,
    post(
      JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'stream', arguments: { events: EVENTS } },
      }),
      's1',
    ),
    'c',
  );
  const body = observer.proxyResponse(
    request,
    200,
    { 'content-type': 'text/event-stream', 'mcp-session-id': 's1' },
    true,
  );
  const name = nextStream++;
  for (let n = 0; n < EVENTS; n++)
    body.chunk(
      Buffer.from(
        `id: ${name}_${n}\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":${id},"progress":${n},"total":${EVENTS},"message":"${process.hrtime.bigint()}"}}\n\n`,
        'latin1',
      ),
      sink,
    );
  body.chunk(
    Buffer.from(
      `id: ${name}_${EVENTS}\nevent: message\ndata: {"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"done"}]}}\n\n`,
    ),
    sink,
  );
  body.end(sink);
}
for (let i = 0; i < WARM; i++) call();
const start = process.cpuUsage();
for (let i = 0; i < CALLS; i++) call();
const used = process.cpuUsage(start);
console.log(
  `${CALLS} streams of ${EVENTS} events: ${(((used.user + used.system) * 1000) / (CALLS * (EVENTS + 1))).toFixed(0)} ns CPU per event (with making each chunk)`,
);
