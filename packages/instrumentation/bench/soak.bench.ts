/**
 * Client memory soak: heap per live session and per request, and what stays after sessions end,
 * for the bare SDK 1.x client against the same client with `guardedFetch` and with `instrumentFetch`,
 * side by side in one run. Each variant runs in a process of its own, measured from its own baseline
 * after full GCs: sharing one process, a later variant's figures moved with what earlier ones had left
 * (a per-session difference of a few KB is a few MB of heap, the size of that drift). One wrapper per
 * variant is shared by every session, as an application installs it.
 *
 * Per variant: open --sessions sessions (each: initialize, its standalone GET stream, one tools/call
 * with progress events) and keep them → heap per live session; then 4 more calls on each → heap per
 * request while the session lives; then end them in thirds: closed (transport close), DELETEd
 * (terminateSession, then close), abandoned (the application drops the client without a word) →
 * heap kept per ended session, by how it ended. Figures beyond the SDK's own are the variant's
 * minus bare's, measured in the same run. Lab server in a child process, on loopback.
 *
 * With --ended 1000,10000, the churn, before the rest: sessions opened, called once and ended,
 * --churn-width at a time, every other one closed and the others DELETEd (then closed), the heap
 * measured when each count of the list is reached → heap kept per ended session at each count. A
 * figure that stays the same per session from the first count to the last is something kept per
 * session; a fixed cost shrinks per session as the count grows. The churn makes the SDK 1.x client's
 * wire exchanges with plain fetch calls, against a lean server (churn-server.ts): the SDK client
 * alone costs about 13 ms of CPU a session and the lab server more, which would make tens of
 * thousands of sessions take many minutes (the churn's cost about 4 ms); what the wrapper keeps is
 * decided by the wire exchanges, which are the same.
 *
 *   node --expose-gc --import tsx bench/soak.bench.ts [--sessions 600] [--ended 1000,10000] [--churn-width 10]
 *     [--variants bare,guarded,instrumented] [--max-seconds 900]
 */
import { execFile } from 'node:child_process';
import { parseArgs, promisify } from 'node:util';
import { getHeapSpaceStatistics } from 'node:v8';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import type { FetchLike } from '@resumewatch/wire';
import { figure } from '../../../bench/figure.js';
import { startChurnChild, startLabChild } from './lab-child.js';
import { ourGuardedFetch, ourInstrumentedFetch } from './variants.js';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '600' },
    variants: { type: 'string' },
    ended: { type: 'string', default: '' },
    'churn-width': { type: 'string', default: '10' },
    'max-seconds': { type: 'string', default: '900' },
    // Internal: run one variant against this lab URL and print its result as a JSON line.
    child: { type: 'string' },
    url: { type: 'string' },
    'churn-url': { type: 'string' },
  },
});
const SESSIONS = Math.max(3, Number(values.sessions));
const ENDED = values.ended ? values.ended.split(',').map(Number) : [];
if (ENDED.some((n, i) => !(n > 0) || (i > 0 && n <= ENDED[i - 1]!)))
  throw new Error('--ended: increasing session counts, e.g. 1000,10000');
const CHURN_WIDTH = Math.max(1, Number(values['churn-width']));
const MORE_CALLS = 4;
const PROGRESS = 3;
const deadline = Date.now() + Number(values['max-seconds']) * 1000;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

/** Hands the spans waiting in the BatchSpanProcessor's queue to the exporter (which drops them). */
let flushSpans: () => Promise<void> = async () => {};

async function heap(): Promise<number> {
  // Spans queued for export are the OpenTelemetry SDK's buffer, not what the sessions keep.
  await flushSpans();
  // Let closed sockets and finished streams settle before collecting.
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, 20));
    gc!();
  }
  const m = process.memoryUsage();
  // Compiled code is the process's, not the sessions': V8 optimises a path once it is hot, which may
  // first happen in any phase, so code space is left out.
  const code = getHeapSpaceStatistics().find((space) => space.space_name === 'code_space')?.space_used_size ?? 0;
  return m.heapUsed - code + m.arrayBuffers;
}

const dropAll: SpanExporter = { export: (_spans: ReadableSpan[], done) => done({ code: 0 }), shutdown: async () => {} };

interface Session {
  client: Client;
  transport: StreamableHTTPClientTransport;
}

async function call(client: Client): Promise<void> {
  let progress = 0;
  await client.callTool({ name: 'stream_progress', arguments: { count: PROGRESS, delay: 0 } }, undefined, {
    onprogress: () => void progress++,
  });
  if (progress !== PROGRESS) throw new Error(`expected ${PROGRESS} progress notifications, got ${progress}`);
}

interface Result {
  perLive: number;
  perRequest: number;
  keptClosed: number;
  keptDeleted: number;
  keptAbandoned: number;
  keptAll: number;
  /** Heap kept per ended session (half closed, half DELETEd) at each count of --ended. */
  churn: number[];
}

/**
 * Warm-up, not measured: every path the soak measures runs here first (a session opened, called,
 * then closed or DELETEd), so that the code V8 compiles on a path's first use is not counted as
 * memory kept by the sessions that happen to take it first (a few hundred KB of code over a third of
 * the sessions reads as a kilobyte kept per session).
 */
async function soakWarm(url: string, fetch: FetchLike | undefined): Promise<void> {
  for (let i = 0; i < Math.min(30, SESSIONS); i++) {
    const transport = new StreamableHTTPClientTransport(new URL(url), fetch ? { fetch } : {});
    const client = new Client({ name: 'soak', version: '1.0.0' });
    await client.connect(transport);
    await call(client);
    if (i % 2 === 0) await transport.terminateSession();
    await client.close();
  }
}

async function soak(url: string, fetch: FetchLike | undefined): Promise<Result> {
  const check = () => {
    if (Date.now() > deadline) throw new Error('soak: over --max-seconds');
  };
  const base = await heap();
  // The application's references: an ended session's entry is cleared, so that only what the SDK and
  // the wrapper still hold of it can stay on the heap.
  const sessions: (Session | undefined)[] = [];
  for (let i = 0; i < SESSIONS; i++) {
    const transport = new StreamableHTTPClientTransport(new URL(url), fetch ? { fetch } : {});
    const client = new Client({ name: 'soak', version: '1.0.0' });
    await client.connect(transport);
    await call(client);
    sessions.push({ client, transport });
    if (i % 100 === 0) check();
  }
  const live = await heap();
  for (const s of sessions) for (let k = 0; k < MORE_CALLS; k++) await call(s!.client);
  const busy = await heap();
  check();
  const third = Math.floor(SESSIONS / 3);
  for (let i = 0; i < third; i++) {
    await sessions[i]!.client.close();
    sessions[i] = undefined;
  }
  const afterClosed = await heap();
  for (let i = third; i < 2 * third; i++) {
    await sessions[i]!.transport.terminateSession();
    await sessions[i]!.client.close();
    sessions[i] = undefined;
  }
  const afterDeleted = await heap();
  check();
  // Abandoned: no close, no DELETE; only the application's references go (their GET streams stay open).
  const n = SESSIONS - 2 * third;
  sessions.length = 0;
  const afterAbandoned = await heap();
  const perLive = (live - base) / SESSIONS;
  return {
    perLive,
    perRequest: (busy - live) / (SESSIONS * MORE_CALLS),
    // What an ended session still holds: its share of the live heap minus what its ending released.
    keptClosed: perLive - (busy - afterClosed) / third + (MORE_CALLS * (busy - live)) / (SESSIONS * MORE_CALLS),
    keptDeleted:
      perLive - (afterClosed - afterDeleted) / third + (MORE_CALLS * (busy - live)) / (SESSIONS * MORE_CALLS),
    keptAbandoned:
      perLive - (afterDeleted - afterAbandoned) / n + (MORE_CALLS * (busy - live)) / (SESSIONS * MORE_CALLS),
    keptAll: (afterAbandoned - base) / SESSIONS,
    churn: [],
  };
}

const PROTOCOL = '2025-06-18';

/** Reads a text stream to its end. */
async function readText(stream: ReadableStream<string>): Promise<string> {
  const reader = stream.getReader();
  let text = '';
  for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
  return text;
}

/**
 * One session of the churn, on the wire as the SDK 1.x client makes it (without the SDK's own CPU
 * cost, which would make ten thousand sessions take many minutes): initialize, the initialized
 * notification, the standalone GET stream (read as the SDK does, through a TextDecoderStream), one
 * tools/call answered on an SSE stream, a DELETE with `terminate`, then the transport closed (its
 * signal aborted, as the SDK's close does).
 */
async function oneSession(url: string, fetch: FetchLike, terminate: boolean): Promise<void> {
  const controller = new AbortController();
  const signal = controller.signal;
  const post = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const rpc = (message: object) => JSON.stringify({ jsonrpc: '2.0', ...message });
  const clientInfo = { name: 'soak', version: '1.0.0' };
  const initialize = {
    id: 0,
    method: 'initialize',
    params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo },
  };
  const initialized = await fetch(url, { method: 'POST', headers: post, body: rpc(initialize), signal });
  const sessionId = initialized.headers.get('mcp-session-id')!;
  await initialized.json();
  const session = { 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL };
  const headers = { ...post, ...session };
  const notified = await fetch(url, {
    method: 'POST',
    headers,
    body: rpc({ method: 'notifications/initialized' }),
    signal,
  });
  await notified.text();
  const get = { accept: 'text/event-stream', ...session };
  const listening = await fetch(url, { method: 'GET', headers: get, signal });
  const reading = readText(listening.body!.pipeThrough(new TextDecoderStream())).catch(() => undefined);
  const params = { name: 'stream_progress', arguments: { count: PROGRESS, delay: 0 }, _meta: { progressToken: 1 } };
  const called = await fetch(url, {
    method: 'POST',
    headers,
    body: rpc({ id: 1, method: 'tools/call', params }),
    signal,
  });
  const events = await readText(called.body!.pipeThrough(new TextDecoderStream()));
  if (!events.includes('"result"')) throw new Error(`churn: no result in ${events}`);
  if (terminate) await (await fetch(url, { method: 'DELETE', headers: session, signal })).text();
  controller.abort();
  await reading;
}

/**
 * Sessions opened and ended, CHURN_WIDTH at a time, up to each count of --ended: the heap kept per
 * ended session at each count, measured from the heap before the first.
 */
async function churn(url: string, fetch: FetchLike): Promise<number[]> {
  const kept: number[] = [];
  const base = await heap();
  let ended = 0;
  for (const count of ENDED) {
    while (ended < count) {
      const width = Math.min(CHURN_WIDTH, count - ended);
      await Promise.all(Array.from({ length: width }, (_, i) => oneSession(url, fetch, (ended + i) % 2 === 1)));
      ended += width;
      if (ended % 500 < width && Date.now() > deadline) throw new Error('soak: over --max-seconds');
    }
    kept.push(((await heap()) - base) / count);
  }
  return kept;
}

const makers: Record<string, (provider: BasicTracerProvider) => FetchLike | undefined> = {
  bare: () => undefined,
  guarded: () => ourGuardedFetch(),
  instrumented: (provider) => ourInstrumentedFetch(provider),
};

if (values.child !== undefined) {
  // The child: one variant, warmed up, then measured; its result is its last line.
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropAll)] });
  flushSpans = () => provider.forceFlush();
  const make = makers[values.child];
  if (!make || !values.url) throw new Error(`soak child: unknown variant ${values.child} or no --url`);
  // Warm-up, not reported: the first sessions of a process pay for compiling the SDK's code paths.
  await soakWarm(values.url, make(provider));
  const fetch = make(provider);
  // The churn first, from a heap the soak's sessions have not touched (what they leave, such as idle
  // sockets, settles over seconds and would be counted against the churn's sessions).
  let churned: number[] = [];
  if (ENDED.length > 0) {
    const churnUrl = values['churn-url']!;
    const churnFetch = fetch ?? globalThis.fetch;
    // Warm-up of the churn's paths, not measured.
    for (let i = 0; i < 40; i++) await oneSession(churnUrl, churnFetch, i % 2 === 0);
    churned = await churn(churnUrl, churnFetch);
  }
  const result = await soak(values.url, fetch);
  result.churn = churned;
  await provider.shutdown();
  console.log(JSON.stringify(result));
  // Abandoned sessions' streams are still open by design: end the process here.
  process.exit(0);
}

const names = values.variants?.split(',') ?? Object.keys(makers);
if (names[0] !== 'bare') throw new Error('--variants must start with bare: the other figures are taken against it');
for (const name of names) if (!makers[name]) throw new Error(`--variants: unknown variant ${name}`);
// Past about a thousand live sessions on one lab server, calls start to hang (SDK request timeouts): kept below.
if (SESSIONS > 900)
  throw new Error(
    '--sessions: at most 900 a variant (one lab server each; past about a thousand live sessions its calls hang)',
  );
const results: Record<string, Result> = {};
const started = Date.now();
const run = promisify(execFile);
// Each variant gets its own lab server: closed and abandoned sessions stay known to a server, and one
// variant's must not push the next one's out of the server's bounded session registry.
for (const name of names) {
  const lab = await startLabChild();
  const churnServer = ENDED.length > 0 ? await startChurnChild() : undefined;
  try {
    const seconds = Math.max(1, Math.floor((deadline - Date.now()) / 1000));
    const args = [...process.execArgv, import.meta.filename, '--child', name, '--url', lab.url];
    args.push('--sessions', String(SESSIONS), '--max-seconds', String(seconds));
    if (churnServer)
      args.push('--ended', ENDED.join(','), '--churn-width', String(CHURN_WIDTH), '--churn-url', churnServer.url);
    const { stdout } = await run(process.execPath, args, { maxBuffer: 1 << 20 });
    results[name] = JSON.parse(stdout.trim().split('\n').at(-1)!) as Result;
  } finally {
    lab.stop();
    churnServer?.stop();
  }
}

const kb = (b: number) => `${(b / 1024).toFixed(2)} KiB`;
console.log(
  `client memory soak: ${SESSIONS} sessions per variant, each variant in a process of its own (a tools/call of ${PROGRESS} progress events each, then ${MORE_CALLS} more per session); ends: a third closed, a third DELETEd, a third abandoned; Node ${process.version}; ${((Date.now() - started) / 1000).toFixed(0)} s`,
);
console.log(
  'variant        per live session   per request (live)   kept per closed   kept per DELETEd   kept per abandoned   kept per session, all ended',
);
for (const name of names) {
  const r = results[name]!;
  console.log(
    `${name.padEnd(14)} ${kb(r.perLive).padStart(16)}   ${kb(r.perRequest).padStart(18)}   ${kb(r.keptClosed).padStart(15)}   ${kb(r.keptDeleted).padStart(16)}   ${kb(r.keptAbandoned).padStart(18)}   ${kb(r.keptAll).padStart(27)}`,
  );
}
if (ENDED.length > 0) {
  console.log(
    `churn (the SDK 1.x client's wire exchanges with plain fetch, lean server): sessions opened, called once and ended (every other one DELETEd), ${CHURN_WIDTH} at a time; heap kept per ended session at ${ENDED.join(', ')} sessions`,
  );
  for (const name of names) {
    const r = results[name]!;
    const at = (kept: number[]) => kept.map(kb).join(' / ');
    console.log(`${name.padEnd(14)} ${at(r.churn)}`);
  }
}
const bare = results.bare!;
for (const name of names) {
  if (name === 'bare') continue;
  const r = results[name]!;
  const label = name === 'guarded' ? 'guardedFetch' : 'instrumentFetch';
  const note = `${SESSIONS} sessions; heap (code space left out) + array buffers after GC, span queue flushed; the wrapper shared by every session`;
  figure({
    bench: 'client-soak',
    name: `${label}: heap per live session beyond the bare SDK's`,
    value: r.perLive - bare.perLive,
    unit: 'bytes',
    reference: { name: 'bare SDK, per live session', value: bare.perLive, unit: 'bytes' },
    target: 'under 1 KB',
    note,
  });
  figure({
    bench: 'client-soak',
    name: `${label}: heap per request of a live session beyond the bare SDK's`,
    value: r.perRequest - bare.perRequest,
    unit: 'bytes',
    reference: { name: 'bare SDK, per request', value: bare.perRequest, unit: 'bytes' },
    note,
  });
  figure({
    bench: 'client-soak',
    name: `${label}: kept per closed session (transport closed) beyond the bare SDK's`,
    value: r.keptClosed - bare.keptClosed,
    unit: 'bytes',
    reference: { name: 'bare SDK, kept per closed session', value: bare.keptClosed, unit: 'bytes' },
    target: 'nothing kept',
    note,
  });
  figure({
    bench: 'client-soak',
    name: `${label}: kept per DELETEd session beyond the bare SDK's`,
    value: r.keptDeleted - bare.keptDeleted,
    unit: 'bytes',
    reference: { name: 'bare SDK, kept per DELETEd session', value: bare.keptDeleted, unit: 'bytes' },
    target: 'nothing kept',
    note,
  });
  ENDED.forEach((count, i) => {
    figure({
      bench: 'client-soak',
      name: `${label}: kept per ended session beyond the bare client's, ${count} sessions ended`,
      value: r.churn[i]! - bare.churn[i]!,
      unit: 'bytes',
      reference: { name: 'bare client, kept per ended session', value: bare.churn[i]!, unit: 'bytes' },
      target: 'nothing kept',
      note: `${count} sessions opened, called once and ended (every other one DELETEd, all closed), ${CHURN_WIDTH} at a time, before the live soak; the SDK 1.x client's wire exchanges made with plain fetch calls against a lean server; heap (code space left out) + array buffers after GC, span queue flushed`,
    });
  });
  figure({
    bench: 'client-soak',
    name: `${label}: kept per abandoned session beyond the bare SDK's`,
    value: r.keptAbandoned - bare.keptAbandoned,
    unit: 'bytes',
    reference: { name: 'bare SDK, kept per abandoned session', value: bare.keptAbandoned, unit: 'bytes' },
    note: `${note}; an abandoned session's transport is never closed, so the caps, not release, bound it`,
  });
}
process.exit(0);
