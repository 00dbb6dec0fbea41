/**
 * The wire observer's own cost per SSE event, in instructions without V8's collector and compilers
 * (countInstructions' own: the measured work only, two sizes three times each), with no
 * network, no SDK and no HTTP: what is left is the observer's work.
 *
 * - client path: a fetch wrapped by a WireObserver with one deciding listener (as instrumentFetch and
 *   guardedFetch have) against the same fetch unwrapped, over an in-process upstream answering each
 *   tools/call with `--progress` progress events and the result in 15.7 KB chunks (as the SDK's server
 *   writes them over loopback).
 * - proxy path: the gateway's (`proxyRequest`, `proxyResponse`, each event a chunk pushed into a sink),
 *   configured as the gateway's observation configures it, against making the same chunks alone.
 */
import { arg, countInstructions, figure, measured, option } from '../../../bench/harness.js';

// The build, as users run it (`pnpm bench` builds first); a path the type-check, run before any build, does not follow.
const BUILT = '../dist/index.js';
const { WireObserver } = (await import(BUILT)) as typeof import('../src/index.js');

const PROGRESS = arg('progress', 1000, 20);
const variant = option('count');

/** In-process upstream: a tools/call's SSE stream of PROGRESS events and the result, in 15,708-byte chunks. */
const upstream = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
  const id = (/"id":(\d+)/.exec(String(init?.body)) ?? [])[1];
  let text = '';
  for (let n = 1; n <= PROGRESS; n++)
    text += `event: message\nid: b8d4ae80.${n}.254b2bb7\ndata: {"method":"notifications/progress","params":{"progressToken":${id},"progress":${n},"total":${PROGRESS}},"jsonrpc":"2.0"}\n\n`;
  const all = Buffer.from(
    `${text}event: message\nid: b8d4ae80.0.254b2bb7\ndata: {"result":{"content":[]},"jsonrpc":"2.0","id":${id}}\n\n`,
    'latin1',
  );
  let off = 0;
  const body = new ReadableStream<Uint8Array>({
    pull: (c) => (off < all.length ? c.enqueue(all.subarray(off, (off += 15_708))) : c.close()),
  });
  return new Response(body, { headers: { 'content-type': 'text/event-stream', 'mcp-session-id': 's1' } });
};
let nextId = 1;
const headers = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-session-id': 's1',
  'mcp-protocol-version': '2025-06-18',
};
const callBody = () =>
  `{"jsonrpc":"2.0","id":${nextId++},"method":"tools/call","params":{"name":"stream","arguments":{}}}`;

async function clientCall(fetch: typeof upstream): Promise<void> {
  const reader = (
    await fetch('http://127.0.0.1:1/mcp', { method: 'POST', headers, body: callBody() })
  ).body!.getReader();
  while (!(await reader.read()).done);
}

const proxyObserver = new WireObserver({
  releaseOnTransportClose: false,
  sessionlessApart: true,
  confirmDelivery: true,
});
const sink = { enqueue: () => undefined };
function proxyCall(observe: boolean): void {
  const id = nextId;
  const request = observe
    ? proxyObserver.proxyRequest(
        'http://127.0.0.1:1/mcp',
        { method: 'POST', headers: Object.entries(headers), body: new TextEncoder().encode(callBody()) },
        'c',
      )
    : undefined;
  const body = request
    ? proxyObserver.proxyResponse(request, 200, { 'content-type': 'text/event-stream', 'mcp-session-id': 's1' }, true)
    : undefined;
  for (let n = 0; n <= PROGRESS; n++) {
    const chunk = Buffer.from(
      n < PROGRESS
        ? `id: ${id}_${n}\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":${id},"progress":${n},"total":${PROGRESS}}}\n\n`
        : `id: ${id}_${n}\nevent: message\ndata: {"jsonrpc":"2.0","id":${id},"result":{"content":[]}}\n\n`,
      'latin1',
    );
    body?.chunk(chunk, sink);
  }
  body?.end(sink);
}

if (variant) {
  // One counted run: `--count client|client-bare|proxy|proxy-bare`.
  const wrapped = new WireObserver()
    .addListener({ onEvent: () => undefined, eventsWanted: 'deciding' })
    .wrap(upstream) as typeof upstream;
  const call = variant.startsWith('client')
    ? () => clientCall(variant === 'client' ? wrapped : upstream)
    : async () => proxyCall(variant === 'proxy');
  if (variant.startsWith('proxy')) {
    // The session's initialize first, as the gateway sees it.
    const [rpc, caps, v] = [
      '{"jsonrpc":"2.0","id":0,',
      '"protocolVersion":"2025-06-18","capabilities":{}',
      '"version":"1"}}}',
    ];
    const [h, json] = [
      Object.entries(headers).slice(0, 2),
      { 'content-type': 'application/json', 'mcp-session-id': 's1' },
    ];
    const body = new TextEncoder().encode(
      `${rpc}"method":"initialize","params":{${caps},"clientInfo":{"name":"b",${v}`,
    );
    const init = proxyObserver.proxyRequest('http://127.0.0.1:1/mcp', { method: 'POST', headers: h, body }, 'c');
    const b = proxyObserver.proxyResponse(init, 200, json, true);
    b?.chunk(Buffer.from(`${rpc}"result":{${caps},"serverInfo":{"name":"u",${v}`), sink);
    b?.end(sink);
  }
  for (let i = 0; i < arg('warm', 20, 2); i++) await call();
  await measured(async (n) => {
    for (let i = 0; i < n; i++) await call();
  });
  process.exit(0);
}

const SIZES: [number, number] = [arg('calls', 5, 1), arg('calls', 5, 1) * 2];
const per = (v: string) =>
  countInstructions(import.meta.filename, ['--count', v], SIZES, (n) => n * (PROGRESS + 1), ['--single-threaded']);
const k = (x: number) => `${(x / 1000).toFixed(1)} k`;
for (const path of ['client', 'proxy'] as const) {
  const [ours, bare] = [await per(path), await per(`${path}-bare`)];
  figure({
    id: `wire-observer-${path}`,
    what: `the wire observer on the ${path === 'client' ? "client's fetch" : "gateway's proxy"} path: instructions added per SSE event`,
    reference: {
      what: path === 'client' ? 'the bare fetch' : 'making the chunks alone',
      value: bare.own,
      unit: 'instructions per SSE event',
    },
    ours: { value: ours.own - bare.own, unit: 'instructions added per SSE event' },
    ratio: ours.own / bare.own,
    note: `${PROGRESS} events a stream; without collector and compilers (countInstructions' own); its five differences: ours ${ours.spread.map(k).join('–')}, the reference ${bare.spread.map(k).join('–')}; collector ${k(ours.collector)}, the reference's ${k(bare.collector)}; compilers ${k(ours.compiler)}, ${k(bare.compiler)}`,
  });
}
