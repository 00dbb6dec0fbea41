import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { serverPerFile } from './per-file.js';
import type { ServerPerFile } from './per-file.js';

/**
 * A Streamable HTTP server written by hand, so the wire's and the guard's tests control every byte and
 * see every request that arrives. POST initialize → JSON with a session id. POST tools/call → SSE:
 * `progress` progress events, then (unless cut) a keepalive comment, the result and a clean close.
 * GET with Last-Event-ID → what `resumeMode` says: replay the stream's events after the cursor and
 * close, answer with an empty stream (closed or held open), or a status.
 */
type ResumeMode = 'replay' | 'empty-close' | 'empty-open' | { status: number };

export interface SseServer {
  url: string;
  resumeMode: ResumeMode;
  /** Progress events before the result. */
  progress: number;
  /** Destroy the socket of the next tools/call stream after its progress events, before the result. */
  cutNextStream: boolean;
  /** Last-Event-ID of every GET that reached the server, in order. */
  resumes: string[];
  /** Raw bytes written on each response, by `POST <id>` or `GET <cursor>`. */
  written: Map<string, string>;
  close(): Promise<void>;
}

interface Logged {
  id: string;
  stream: string;
  text: string;
}

export async function startSseServer(): Promise<SseServer> {
  const log: Logged[] = [];
  const open = new Set<ServerResponse>();
  const state: SseServer = {
    url: '',
    resumeMode: 'replay',
    progress: 1,
    cutNextStream: false,
    resumes: [],
    written: new Map(),
    close: async () => {},
  };

  const server = createServer((req, res) => void handle(req, res));
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === 'GET') {
      const cursor = req.headers['last-event-id'];
      if (typeof cursor === 'string') state.resumes.push(cursor);
      const mode = state.resumeMode;
      if (typeof mode === 'object') {
        res.writeHead(mode.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'gone' } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let text = '';
      if (mode === 'replay' && typeof cursor === 'string') {
        const at = log.findIndex((e) => e.id === cursor);
        if (at >= 0) {
          const stream = log[at]!.stream;
          for (const entry of log.slice(at + 1)) {
            if (entry.stream !== stream) continue;
            res.write(entry.text);
            text += entry.text;
          }
        }
      }
      state.written.set(`GET ${cursor ?? ''}`, text);
      if (mode === 'empty-open') {
        res.write(': held open\n\n');
        open.add(res);
        res.on('close', () => open.delete(res));
        return;
      }
      res.end();
      return;
    }
    let body = '';
    for await (const chunk of req) body += chunk;
    const message = JSON.parse(body) as { id?: number | string; method: string };
    if (message.method === 'initialize') {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'session-1' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-06-18' } }));
      return;
    }
    if (message.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const stream = `s${message.id}`;
    let text = '';
    let n = 0;
    const send = (payload: object): void => {
      const id = `${stream}-${++n}`;
      const event = `id: ${id}\ndata: ${JSON.stringify(payload)}\n\n`;
      log.push({ id, stream, text: event });
      text += event;
      res.write(event);
    };
    for (let i = 1; i <= state.progress; i++)
      send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: i } });
    const cut = state.cutNextStream;
    state.cutNextStream = false;
    if (cut) {
      // The events written so far reach the client before the cut: real time, as on a network.
      await delay(30);
      res.socket?.destroy();
      // Stored for replay, never delivered on this stream.
      n++;
      const id = `${stream}-${n}`;
      log.push({
        id,
        stream,
        text: `id: ${id}\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { content: [] } })}\n\n`,
      });
      state.written.set(`POST ${message.id}`, text);
      return;
    }
    res.write(': keepalive\n\n');
    text += ': keepalive\n\n';
    send({ jsonrpc: '2.0', id: message.id, result: { content: [] } });
    state.written.set(`POST ${message.id}`, text);
    res.end();
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  state.url = `http://127.0.0.1:${port}/mcp`;
  state.close = () =>
    new Promise((resolve) => {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

/**
 * One SSE server for the whole test file that calls this at its top level: started before its first test,
 * closed after its last; before each test it replays resumes again, sends one progress event and forgets
 * the resumes it saw.
 */
export function sseServerPerFile(): ServerPerFile<SseServer> {
  return serverPerFile(startSseServer, (server) => {
    server.resumeMode = 'replay';
    server.progress = 1;
    server.resumes.length = 0;
  });
}
