/**
 * Client memory: heap per live session and what stays after sessions end, for guardedFetch and
 * instrumentFetch beyond the bare SDK 1.x client's, each variant in a process of its own (its own
 * baseline after full GCs; a lab server of its own), one wrapper shared by every session.
 *
 * - Live: `--sessions` sessions (initialize, the standalone GET stream, a tools/call of 3 progress
 *   events) kept open → heap per live session. Then a third closed, a third DELETEd → kept per
 *   closed and per DELETEd session (its share of the live heap minus what its ending released).
 * - Churn, first: sessions opened, called once and ended (every other one DELETEd), 10 at a time, up
 *   to each count of `--ended`, made with plain fetch calls as the SDK 1.x client makes them against a
 *   lean server (the SDK and lab server would take many minutes) → kept per ended session at each
 *   count: what stays the same per session from count to count is kept per session.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@resumewatch/wire';
import { Child, SMOKE, arg, figure, heapNow, listen, option, serve } from '../../../bench/harness.js';
import { VARIANTS, leanServer, startLabChild, variantFetch, type Variant } from './lab-child.js';

const SESSIONS = arg('sessions', 600, 6);
const ENDED = SMOKE ? [10, 20] : [1000, 10_000];
const WARM = arg('warm', 30, 4);

interface Result {
  perLive: number;
  keptClosed: number;
  keptDeleted: number;
  churn: number[];
}

/** Reads a body to its end as the SDK does, through a TextDecoderStream. */
async function readText(body: ReadableStream<Uint8Array>): Promise<string> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
  return text;
}

/** One session of the churn as the SDK 1.x client makes it on the wire, ended by DELETE or by close. */
async function oneSession(url: string, fetch: FetchLike, terminate: boolean): Promise<void> {
  const controller = new AbortController();
  const post = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  let session: Record<string, string> = {};
  const send = (method: string, headers: Record<string, string>, message?: object) =>
    fetch(url, {
      method,
      headers: { ...headers, ...session },
      signal: controller.signal,
      body: message && JSON.stringify({ jsonrpc: '2.0', ...message }),
    });
  const clientInfo = { name: 'soak', version: '1' };
  const init = await send('POST', post, {
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo },
  });
  session = { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
  await init.text();
  await (await send('POST', post, { method: 'notifications/initialized' })).text();
  const listening = readText((await send('GET', { accept: 'text/event-stream' })).body!).catch(() => undefined);
  const params = { name: 'stream_progress', arguments: { count: 3, delay: 0 }, _meta: { progressToken: 1 } };
  const called = await send('POST', post, { id: 1, method: 'tools/call', params });
  if (!(await readText(called.body!)).includes('"result"')) throw new Error('churn: no result');
  if (terminate) await (await send('DELETE', {})).text();
  controller.abort();
  await listening;
}

async function variant(name: Variant, url: string, churnUrl: string): Promise<Result> {
  const { fetch, provider } = variantFetch(name);
  // Spans queued for export are the OpenTelemetry SDK's buffer, not what the sessions keep.
  const heap = async () => {
    await provider.forceFlush();
    return (await heapNow()).heap;
  };
  const connect = async () => {
    const transport = new StreamableHTTPClientTransport(new URL(url), fetch ? { fetch } : {});
    const client = new Client({ name: 'soak', version: '1' });
    await client.connect(transport);
    await client.callTool({ name: 'stream_progress', arguments: { count: 3, delay: 0 } });
    return { client, transport };
  };
  // Warm-up of every path measured (code compiled on a path's first use is not the sessions').
  for (let i = 0; i < WARM; i++) await oneSession(churnUrl, fetch ?? globalThis.fetch, i % 2 === 0);
  for (let i = 0; i < Math.min(WARM, SESSIONS); i++) {
    const s = await connect();
    if (i % 2 === 0) await s.transport.terminateSession();
    await s.client.close();
  }
  // The churn first, from a heap the live sessions have not touched.
  const churn: number[] = [];
  const churnBase = await heap();
  let ended = 0;
  for (const count of ENDED) {
    for (; ended < count; ended += 10)
      await Promise.all(
        Array.from({ length: 10 }, (_, k) => oneSession(churnUrl, fetch ?? globalThis.fetch, (ended + k) % 2 === 1)),
      );
    churn.push(((await heap()) - churnBase) / count);
  }
  const base = await heap();
  const sessions: ({ client: Client; transport: StreamableHTTPClientTransport } | undefined)[] = [];
  for (let i = 0; i < SESSIONS; i++) sessions.push(await connect());
  const live = await heap();
  const third = Math.floor(SESSIONS / 3);
  let afterClosed = 0;
  for (let i = 0; i < 2 * third; i++) {
    if (i === third) afterClosed = await heap();
    if (i >= third) await sessions[i]!.transport.terminateSession();
    await sessions[i]!.client.close();
    sessions[i] = undefined; // only what the SDK and the wrapper hold of it can stay
  }
  const afterDeleted = await heap();
  const perLive = (live - base) / SESSIONS;
  return {
    perLive,
    keptClosed: perLive - (live - afterClosed) / third,
    keptDeleted: perLive - (afterClosed - afterDeleted) / third,
    churn,
  };
}

if (option('role') === 'churn-server') {
  serve({}, { url: `${await listen(leanServer(3))}/mcp` });
} else if (option('role') === 'variant') {
  // Abandoned streams stay open by design: the process ends when the parent goes.
  serve({ soak: () => variant(option('variant') as Variant, option('url')!, option('churn')!) });
} else {
  const results: Record<string, Result> = {};
  for (const v of VARIANTS) {
    const lab = await startLabChild();
    try {
      const churn = (await Child.start(import.meta.filename, ['--role', 'churn-server'])).first.url as string;
      const child = await Child.start(import.meta.filename, [
        ...(SMOKE ? ['--smoke'] : []),
        ...['--role', 'variant', '--variant', v, '--url', lab.url, '--churn', churn, '--sessions', String(SESSIONS)],
      ]);
      results[v] = await child.ask<Result>('soak');
    } finally {
      await Child.stopAll();
      lab.stop();
    }
  }
  const bare = results.bare!;
  for (const [v, label] of [
    ['guard', 'guardedFetch'],
    ['instrumented', 'instrumentFetch'],
  ] as const) {
    const r = results[v]!;
    const row = (id: string, what: string, ours: number, ref: number, live: boolean) =>
      figure({
        id: `soak-${v}-${id}`,
        what: `${label}: ${what} beyond the bare client's`,
        target: live
          ? { text: '< 1 KB', bound: 1024, dir: '<=', on: 'ours' }
          : { text: 'nothing kept (≤ 64 B, the probe’s noise)', bound: 64, dir: '<=', on: 'ours' },
        reference: { what: `bare client, ${what}`, value: ref, unit: 'B' },
        ours: { value: ours - ref, unit: 'B' },
        heldBy: live ? "the wrapper's state per session" : 'what the wrapper keeps of an ended session',
        note: `${SESSIONS} sessions; heap after full GCs, code space left out, span queue flushed`,
      });
    row('live', 'heap per live session', r.perLive, bare.perLive, true);
    row('closed', 'kept per closed session', r.keptClosed, bare.keptClosed, false);
    row('deleted', 'kept per DELETEd session', r.keptDeleted, bare.keptDeleted, false);
    ENDED.forEach((n, i) =>
      row(`ended-${n}`, `kept per ended session, ${n} ended`, r.churn[i]!, bare.churn[i]!, false),
    );
  }
}
