// A fetch's body comes decoded (undici undoes gzip, deflate and br), its Content-Encoding header left in
// place: the observer reads it as it is, and only a proxy's body (`proxyResponse`) is decoded by the
// observer itself (decoded-tap.ts). Real fetch over loopback, a gzip'd SSE body flushed per event.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGzip } from 'node:zlib';
import { expect, it } from 'vitest';
import { WireObserver } from '../src/index.js';
import { serverPerFile } from './helpers/per-file.js';

const events = [
  'id: 1\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n',
  'id: 2\ndata: {"jsonrpc":"2.0","id":7,"result":{}}\n\n',
];

const server = serverPerFile(async () => {
  const http = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
    const gz = createGzip();
    gz.pipe(res);
    for (const event of events) {
      gz.write(event);
      gz.flush();
    }
    gz.end();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    close: () => new Promise<void>((resolve) => http.close(() => resolve())),
  };
});

it('a fetch of a gzip’d SSE body: the observer reads fetch’s decoded bytes, and counts nothing unread', async () => {
  const observer = new WireObserver();
  const seen: (string | undefined)[] = [];
  observer.addListener({ onEvent: (e) => void seen.push(e.eventId) });
  const fetch = observer.wrap();
  const response = await fetch(server.server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'x' } }),
  });
  expect(response.headers.get('content-encoding')).toBe('gzip');
  expect(await response.text()).toBe(events.join(''));
  expect(seen).toEqual(['1', '2']);
  expect(observer.stats().unreadEncodedBodies).toBe(0);
});
