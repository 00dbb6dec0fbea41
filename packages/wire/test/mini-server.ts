import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small Streamable HTTP server written by hand, so the observer's tests control every byte:
 * POST initialize → JSON with a session id; POST tools/call → SSE (progress events, then the result,
 * then a clean close); GET with Last-Event-ID → replays the events after the cursor, then closes.
 */
export interface MiniServer {
  url: string;
  /** Raw SSE bytes written for each POST stream, by request id. */
  written: Map<string, string>;
  /** Destroy the socket of the next tools/call stream after its first event. */
  cutNextStream: boolean;
  close(): Promise<void>;
}

export async function startMiniServer(): Promise<MiniServer> {
  const log: { id: string; text: string }[] = [];
  const written = new Map<string, string>();
  const state: MiniServer = { url: '', written, cutNextStream: false, close: async () => {} };

  const server = createServer((req, res) => void handle(req, res));
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === 'GET') {
      const cursor = req.headers['last-event-id'];
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (typeof cursor === 'string') {
        const at = log.findIndex((e) => e.id === cursor);
        if (at < 0) {
          res.end();
          return;
        }
        const prefix = cursor.split('-')[0];
        for (const entry of log.slice(at + 1)) if (entry.id.startsWith(`${prefix}-`)) res.write(entry.text);
      }
      res.end();
      return;
    }
    let body = '';
    for await (const chunk of req) body += chunk;
    const message = JSON.parse(body) as { id?: number; method: string };
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
    const streamId = `s${message.id}`;
    const cut = state.cutNextStream;
    state.cutNextStream = false;
    let text = '';
    const send = (n: number, payload: object): void => {
      const id = `${streamId}-${n}`;
      const event = `id: ${id}\ndata: ${JSON.stringify(payload)}\n\n`;
      log.push({ id, text: event });
      text += event;
      res.write(event);
    };
    send(1, { jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } });
    if (cut) {
      await new Promise((r) => setTimeout(r, 20));
      res.socket?.destroy();
      send(2, { jsonrpc: '2.0', id: message.id, result: { content: [] } });
      written.set(String(message.id), text);
      return;
    }
    res.write(': keepalive\n\n');
    text += ': keepalive\n\n';
    send(2, { jsonrpc: '2.0', id: message.id, result: { content: [] } });
    written.set(String(message.id), text);
    res.end();
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  state.url = `http://127.0.0.1:${port}/mcp`;
  state.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}
