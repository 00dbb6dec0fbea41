/**
 * The gateway's cost per JSON request, or per SSE event, counted in instructions (stable on a loaded
 * machine, unlike time): client, proxy and upstream in this one process, `calls` tools/call requests
 * answered with JSON (the answer of bench/upstream-server.ts), one after another over one session,
 * through the gateway's build (`gateway`), a bare node:http proxy as proxy-child.ts's (`bare`), or
 * straight to the upstream (`direct`). With a third argument, `events`, each tools/call is answered by
 * an SSE stream of that many progress notifications and its result, as bench/upstream-server.ts writes
 * them unpaced (one write per event). No syscall is counted (callgrind counts user space), so what a
 * proxy writes shows only as the JavaScript and C++ that write it.
 *
 * Run it twice under callgrind with two call counts; the difference over the difference of calls is
 * the cost per request (compilation and start-up fall in both runs):
 *
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node bench/json-instructions.mjs gateway 200
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node bench/json-instructions.mjs gateway 1000
 *   (and `bare`, `direct`: each variant's difference from `direct` is that proxy's own cost)
 *
 * Per SSE event: the same calls, two event counts (the difference over the difference of events, calls
 * times events, is the cost per event beyond its stream's), e.g. 20 calls of 100 and of 600 events.
 *
 * GATEWAY_DIST=<dir> runs another build of the gateway (proxy.bench.ts's BENCH_BEFORE).
 */
import { Agent, createServer, request } from 'node:http';
import { fileURLToPath } from 'node:url';

const variant = process.argv[2] ?? 'gateway';
const CALLS = Number(process.argv[3] ?? 200);
/** Progress events per stream; undefined: JSON answers. */
const EVENTS = process.argv[4] === undefined ? undefined : Number(process.argv[4]);
const WARM = Number(process.env.WARM ?? 200);
const DIST = process.env.GATEWAY_DIST ?? fileURLToPath(new URL('../dist', import.meta.url));

const JSON_RESULT = (id) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    result: {
      content: [{ type: 'text', text: 'The weather in Lisbon is 21 °C, clear sky, wind 12 km/h from the north-west.' }],
      structuredContent: { city: 'Lisbon', temperatureC: 21, sky: 'clear', windKmh: 12, windFrom: 'NW' },
      isError: false,
    },
  });

const listen = (server) =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`)));

let nextStream = 1;
const progressEvent = (stream, n, id, total) =>
  `id: ${stream}_${n}\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":${JSON.stringify(id)},"progress":${n},"total":${total},"message":"${process.hrtime.bigint()}"}}\n\n`;
const resultEvent = (stream, n, id) =>
  `id: ${stream}_${n}\nevent: message\ndata: {"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"done"}]}}\n\n`;
/** An SSE answer as bench/upstream-server.ts's unpaced `stream`: one write per event, as fast as the socket takes them. */
function stream(res, sid, rpc) {
  const events = rpc.params?.arguments?.events ?? 100;
  const name = String(nextStream++);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'mcp-session-id': sid });
  res.flushHeaders();
  let n = 0;
  const write = () => {
    while (n < events) {
      const more = res.write(progressEvent(name, n, rpc.id, events));
      n++;
      if (!more) return void res.once('drain', write);
    }
    res.end(resultEvent(name, n, rpc.id));
  };
  write();
}

// --- The upstream: initialize, notifications, tools/call answered with JSON or SSE ---
const upstreamServer = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (req.method === 'DELETE') return res.writeHead(200).end();
    const rpc = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const sid = req.headers['mcp-session-id'] ?? 's-bench';
    if (rpc.method === 'initialize') {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: rpc.id,
        result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'u', version: '1' } },
      });
      return res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': sid }).end(body);
    }
    if (rpc.id === undefined) return res.writeHead(202, { 'content-length': '0' }).end();
    if (rpc.params?.name === 'stream') return stream(res, sid, rpc);
    res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': sid }).end(JSON_RESULT(rpc.id));
  });
});
upstreamServer.keepAliveTimeout = 600_000;
const upstream = await listen(upstreamServer);

// --- The proxy ---
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);
const endToEnd = (headers) => {
  const out = {};
  for (const name in headers) if (!HOP_BY_HOP.has(name)) out[name] = headers[name];
  return out;
};
let base = upstream;
let stop = async () => undefined;
if (variant === 'gateway') {
  const { startGateway } = await import(`${DIST}/gateway.js`);
  const gateway = await startGateway({ upstream, port: 0, detector: { config: { metricsPort: 0 }, output: null } });
  base = gateway.url;
  stop = () => gateway.close();
} else if (variant === 'bare') {
  const target = new URL(upstream);
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const server = createServer({ requestTimeout: 0 }, (req, res) => {
    const headers = endToEnd(req.headers);
    headers.host = target.host;
    const up = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers, agent });
    up.once('response', (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.statusMessage, endToEnd(ur.headers));
      res.flushHeaders();
      ur.pipe(res);
    });
    req.pipe(up);
  });
  base = await listen(server);
  stop = () => new Promise((resolve) => (server.close(() => resolve()), server.closeAllConnections(), agent.destroy()));
} else if (variant !== 'direct') throw new Error(`json-instructions: unknown variant ${variant}`);

// --- The client, as load-client.ts's `json` op, one session ---
const clientAgent = new Agent({ keepAlive: true, maxSockets: 1 });
let nextId = 1;
const post = (body, session) =>
  new Promise((resolve, reject) => {
    const req = request(`${base}/mcp`, {
      method: 'POST',
      agent: clientAgent,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'content-length': Buffer.byteLength(body),
        ...(session ? { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' } : {}),
      },
    });
    req.once('error', reject);
    req.once('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.once('end', () => resolve({ status: res.statusCode, session: res.headers['mcp-session-id'], text }));
    });
    req.end(body);
  });
const init = await post(
  JSON.stringify({
    jsonrpc: '2.0',
    id: nextId++,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1.0.0' } },
  }),
);
await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), init.session);
const call = async () => {
  const params =
    EVENTS === undefined ? { name: 'json', arguments: {} } : { name: 'stream', arguments: { events: EVENTS } };
  const r = await post(JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params }), init.session);
  if (r.status !== 200 || !r.text.includes('"result"')) throw new Error(`call: ${r.status} ${r.text.slice(0, 200)}`);
  if (EVENTS !== undefined && r.text.split('\n\n').length !== EVENTS + 2)
    throw new Error(`stream: ${r.text.split('\n\n').length - 1} events, expected ${EVENTS + 1}`);
};

for (let i = 0; i < WARM; i++) await call();
const start = process.cpuUsage();
for (let i = 0; i < CALLS; i++) await call();
const used = process.cpuUsage(start);
console.log(
  EVENTS === undefined
    ? `${variant}: ${CALLS} JSON requests, ${((used.user + used.system) / CALLS).toFixed(0)} µs CPU per request (all of client, proxy and upstream)`
    : `${variant}: ${CALLS} streams of ${EVENTS} events, ${((used.user + used.system) / (CALLS * (EVENTS + 1))).toFixed(1)} µs CPU per event (all of client, proxy and upstream)`,
);
clientAgent.destroy();
await stop();
upstreamServer.close();
upstreamServer.closeAllConnections();
