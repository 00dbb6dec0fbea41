/**
 * The benchmark's server, in its own process so that the client's CPU is measured alone. Every POST
 * is answered with an SSE stream of `EVENTS` progress notifications (each with an `id:`), written in
 * batches as a busy server would, then the JSON-RPC result and a clean close. Prints its URL.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const EVENTS = Number(process.argv[2] ?? 100_000);
const BATCH = 64;

const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => (body += chunk));
  req.on('end', () => {
    const { id } = JSON.parse(body) as { id: number };
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let n = 0;
    const write = (): void => {
      while (n < EVENTS) {
        let batch = '';
        for (let i = 0; i < BATCH && n < EVENTS; i++, n++) {
          batch += `id: ${id}-${n}\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":${id},"progress":${n},"total":${EVENTS}}}\n\n`;
        }
        if (!res.write(batch)) {
          res.once('drain', write);
          return;
        }
      }
      res.end(
        `id: ${id}-${EVENTS}\nevent: message\ndata: {"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"done"}]}}\n\n`,
      );
    };
    write();
  });
});
server.listen(0, '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
});
process.on('disconnect', () => process.exit(0));
