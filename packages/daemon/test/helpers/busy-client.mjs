// Runs in a worker thread (busy-client.ts starts it): node:http or fetch POSTs a body in chunks from a
// thread whose event loop is busy for `busyMs` partway through, as an exporting application's is while it
// serializes spans. The chunks written right after the busy spell go out before the loop has read what the
// server sent meanwhile: if the server answered and closed without reading the body, those writes fail
// (EPIPE) before the client has read the answer. One line per try goes back: the status read, or the error.
import { request } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

const { url, client, tries, chunkBytes, before, after, busyMs, headers, declared } = workerData;

/** Blocks this thread's event loop (not the server's, on the main thread). */
const busy = () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, busyMs);
const chunk = () => new Uint8Array(chunkBytes).fill(0x20);

function viaHttp() {
  return new Promise((resolve) => {
    const length = declared ? { 'content-length': String(chunkBytes * (before + after)) } : {};
    const req = request(url, { method: 'POST', agent: false, headers: { ...headers, ...length } });
    req.once('response', (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode));
      res.once('error', (e) => resolve(e.code ?? e.message));
    });
    req.once('error', (e) => resolve(e.code ?? e.message));
    for (let i = 1; i < before; i++) req.write(chunk());
    // After the busy spell, one chunk a tick (as a pipe writes): node:http sends what one tick wrote in one
    // write, and only the write after the one that met the server's close fails.
    const writeFrom = (i) => {
      if (req.destroyed) return;
      if (i === after) return void req.end();
      req.write(chunk());
      process.nextTick(writeFrom, i + 1);
    };
    req.write(chunk(), () =>
      setImmediate(() => {
        busy();
        writeFrom(0);
      }),
    );
  });
}

async function viaFetch() {
  let n = 0;
  const body = new ReadableStream(
    {
      pull(controller) {
        if (n === before) busy();
        if (n++ === before + after) controller.close();
        else controller.enqueue(chunk());
      },
    },
    { highWaterMark: 0 },
  );
  try {
    const res = await fetch(url, { method: 'POST', body, duplex: 'half', headers });
    await res.arrayBuffer();
    return res.status;
  } catch (e) {
    return e.cause?.code ?? e.message;
  }
}

const results = [];
for (let i = 0; i < tries; i++) results.push(await (client === 'fetch' ? viaFetch() : viaHttp()));
parentPort.postMessage(results);
