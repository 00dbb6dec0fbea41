import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FetchLike } from '../../src/index.js';
import { serverPerFile } from './per-file.js';

/** The session id the scripted server names in every response (unless a script's headers say otherwise). */
export const SCRIPTED_SESSION = 'session-1';

/** One canned response: a status, headers and body chunks (written in order, `null` ends the body). */
interface Scripted {
  status?: number;
  headers?: Record<string, string>;
  /** Chunks written one by one; the body ends after the last unless `holdOpen`. */
  chunks?: string[];
  holdOpen?: boolean;
  /** Destroys the connection once the chunks are written: the body breaks (no clean end). */
  cut?: boolean;
}

/**
 * A loopback HTTP server that answers each request with the next scripted response, so a test
 * controls every byte of every body (priming events, `retry:` fields, foreign or conflicting replays).
 */
interface ScriptedServer {
  url: string;
  /** Responses still to give, in order. */
  readonly script: Scripted[];
  /** Method, Last-Event-ID and body of each request that arrived. */
  readonly seen: { method: string; lastEventId: string | undefined; body: string }[];
  close(): Promise<void>;
}

async function startScriptedServer(): Promise<ScriptedServer> {
  const script: Scripted[] = [];
  const seen: ScriptedServer['seen'] = [];
  const server = createServer((req, res) => {
    void (async () => {
      let body = '';
      for await (const chunk of req) body += chunk;
      const lastEventId = req.headers['last-event-id'];
      seen.push({
        method: req.method ?? '',
        lastEventId: typeof lastEventId === 'string' ? lastEventId : undefined,
        body,
      });
      const next = script.shift() ?? { status: 500, chunks: [] };
      res.writeHead(next.status ?? 200, {
        'content-type': 'text/event-stream',
        'mcp-session-id': SCRIPTED_SESSION,
        ...next.headers,
      });
      for (const chunk of next.chunks ?? []) res.write(chunk);
      if (next.cut) res.write('', () => res.socket?.destroy());
      else if (!next.holdOpen) res.end();
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    script,
    seen,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A test file's scripted server, and the two requests its tests script answers for. */
export interface ScriptedServerFixture {
  /** Started before the file's first test, its script emptied before each test, closed after the last. */
  readonly server: ScriptedServer;
  /** POSTs tools/call `id` (tool `slow`) in the scripted session, answered by `chunks`; the body, read to its end. */
  call(fetch: FetchLike, id: number, chunks: string[]): Promise<string>;
  /** GETs the scripted session's stream (a resume when `lastEventId` is given), answered by `chunks`; the body. */
  get(fetch: FetchLike, chunks: string[], lastEventId?: string): Promise<string>;
  /** POSTs a JSON-RPC batch of tools/call requests with these ids (of either JSON type), answered by `chunks`; the body. */
  batch(fetch: FetchLike, ids: readonly (number | string)[], chunks: string[]): Promise<string>;
}

/** One scripted server for the whole test file that calls this at its top level. */
export function scriptedServerPerFile(): ScriptedServerFixture {
  const file = serverPerFile(startScriptedServer, (server) => void (server.script.length = 0));
  const server = (): ScriptedServer => file.server;
  return {
    get server() {
      return server();
    },
    call: async (fetch, id, chunks) => {
      server().script.push({ chunks });
      const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'slow' } });
      const headers = { 'mcp-session-id': SCRIPTED_SESSION, 'content-type': 'application/json' };
      return (await fetch(server().url, { method: 'POST', headers, body })).text();
    },
    batch: async (fetch, ids, chunks) => {
      server().script.push({ chunks });
      const body = JSON.stringify(
        ids.map((id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'slow' } })),
      );
      const headers = { 'mcp-session-id': SCRIPTED_SESSION, 'content-type': 'application/json' };
      return (await fetch(server().url, { method: 'POST', headers, body })).text();
    },
    get: async (fetch, chunks, lastEventId) => {
      server().script.push({ chunks });
      const headers: Record<string, string> = { 'mcp-session-id': SCRIPTED_SESSION };
      if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
      return (await fetch(server().url, { headers })).text();
    },
  };
}

/** An SSE event's bytes. */
export function sse(fields: { id?: string; retry?: number; data?: string | object }): string {
  let out = '';
  if (fields.id !== undefined) out += `id: ${fields.id}\n`;
  if (fields.retry !== undefined) out += `retry: ${fields.retry}\n`;
  if (fields.data !== undefined)
    out += `data: ${typeof fields.data === 'string' ? fields.data : JSON.stringify(fields.data)}\n`;
  return `${out}\n`;
}

/** A progress notification, as a scripted event's data. */
export const progress = (n: number) => ({
  jsonrpc: '2.0',
  method: 'notifications/progress',
  params: { progressToken: 't', progress: n },
});
/** A tools/call result for request `id`, as a scripted event's data. */
export const result = (id: number | string, text: string) => ({
  jsonrpc: '2.0',
  id,
  result: { content: [{ type: 'text', text }] },
});
