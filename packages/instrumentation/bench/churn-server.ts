/**
 * A lean Streamable HTTP server for the soak's churn (soak.bench.ts, --ended): just the exchanges a
 * session of the churn makes, answered at once, so that tens of thousands of sessions run in a few
 * minutes (the lab server, an SDK server per session, costs more CPU per session than the client).
 * POST initialize → JSON with a new session id; a notification → 202; POST tools/call → SSE:
 * three progress notifications and the result, each with an event id, then the end; GET → an SSE
 * stream held open until the client goes; DELETE → 200. Prints its URL once listening.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let sessions = 0;

const server = createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    return;
  }
  if (req.method === 'DELETE') {
    res.writeHead(200).end();
    return;
  }
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => (body += chunk));
  req.on('end', () => {
    const message = JSON.parse(body) as { id?: number | string; method: string; params?: { _meta?: object } };
    if (message.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    if (message.method === 'initialize') {
      const result = {
        protocolVersion: '2025-06-18',
        capabilities: { tools: {} },
        serverInfo: { name: 'churn', version: '1.0.0' },
      };
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': `churn-${++sessions}` });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
      return;
    }
    const stream = `${sessions}-${String(message.id)}`;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const token = (message.params?._meta as { progressToken?: unknown } | undefined)?.progressToken ?? 0;
    let text = '';
    for (let i = 1; i <= 3; i++) {
      const progress = {
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken: token, progress: i },
      };
      text += `id: ${stream}_${i}\ndata: ${JSON.stringify(progress)}\n\n`;
    }
    const result = { jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 'done' }] } };
    res.end(`${text}id: ${stream}_4\ndata: ${JSON.stringify(result)}\n\n`);
  });
});

// Idle keep-alive sockets stay open while the client measures its heap (a pause of seconds): a socket
// the server closed just as the client reused it would fail that session's request.
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  console.log(`MCP http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
});
process.on('SIGTERM', () => process.exit(0));
