import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { WireObserver } from '../src/index.js';
import type { StreamEnd } from '../src/index.js';
import { serverPerFile } from './helpers/per-file.js';

/*
 * A body is observed in place (watched-body.ts): the application gets fetch's own Response and
 * stream. Every way of reading it must pass each event through the observer exactly once, tell its
 * end once, and give the reader exactly the bytes the listeners kept. Real fetch over loopback.
 */

/** What each path of the server writes: chunks, a pause between them; `cut` destroys the socket after them. */
const bodies: Record<string, { type: string; chunks: string[]; cut?: boolean; open?: boolean }> = {
  '/sse': { type: 'text/event-stream', chunks: ['id: 1\ndata: one\n\n', 'id: 2\ndata: two\n\ndata: three\n\n'] },
  '/json': { type: 'application/json', chunks: ['{"jsonrpc":"2.0","id":1,', '"result":{"ok":true}}'] },
  '/cut': { type: 'text/event-stream', chunks: ['data: one\n\n'], cut: true },
  '/open': { type: 'text/event-stream', chunks: ['data: one\n\n'], open: true },
  '/shrink': { type: 'text/event-stream', chunks: ['data: a\n\ndata: drop\n\ndata: b\n\n'] },
  '/all-removed': { type: 'text/event-stream', chunks: ['data: drop 1\n\ndata: drop 2\n\n', 'data: c\n\n'] },
  '/tail': { type: 'text/event-stream', chunks: ['data: a\n\n', 'data: drop\n\ndata: tail'] },
};

const wholeBody = (path: string) => bodies[path]!.chunks.join('');

const server = serverPerFile(async () => {
  const http = createServer((req, res) => {
    const body = bodies[req.url!]!;
    res.writeHead(200, { 'content-type': body.type });
    void (async () => {
      for (const chunk of body.chunks) {
        res.write(chunk);
        await delay(15);
      }
      if (body.cut) res.destroy();
      else if (!body.open) res.end();
    })();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    close: () => {
      http.closeAllConnections();
      return new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
});

/** An observer whose listener removes the SSE events whose data holds "drop" (a filtering listener, as the guard). */
function observed() {
  const observer = new WireObserver();
  const events: string[] = [];
  const ends: StreamEnd[] = [];
  observer.addListener(
    {
      onEvent: (event) => {
        events.push(event.sse ? event.sse.data : JSON.stringify(event.messages));
        return !event.sse?.data.includes('drop');
      },
      onStreamEnd: (_request, _stream, how) => void ends.push(how),
    },
    { filters: true },
  );
  const fetch = observer.wrap();
  return { events, ends, fetch: (path: string) => fetch(server.server.url + path) };
}

async function readAll(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    chunks.push(value);
  }
}

const text = (chunks: Uint8Array[]) => Buffer.concat(chunks).toString('utf8');

describe('a body observed in place', () => {
  it('is the response fetch returned, and getReader().read() to the end sees each event once', async () => {
    const { events, ends, fetch } = observed();
    const response = await fetch('/sse');
    expect(response).toBeInstanceOf(Response);
    expect(response.url).toBe(server.server.url + '/sse');
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const chunks = await readAll(response.body!.getReader());
    expect(text(chunks)).toBe(wholeBody('/sse'));
    expect(events).toEqual(['one', 'two', 'three']);
    expect(ends).toEqual(['clean']);
    expect(response.bodyUsed).toBe(true);
  });

  it('text() reads through the tap', async () => {
    const { events, ends, fetch } = observed();
    expect(await (await fetch('/sse')).text()).toBe(wholeBody('/sse'));
    expect(events).toEqual(['one', 'two', 'three']);
    expect(ends).toEqual(['clean']);
  });

  it('json() of a JSON body: its messages observed once', async () => {
    const { events, ends, fetch } = observed();
    expect(await (await fetch('/json')).json()).toEqual({ jsonrpc: '2.0', id: 1, result: { ok: true } });
    expect(events).toEqual([JSON.stringify([{ jsonrpc: '2.0', id: 1, result: { ok: true } }])]);
    expect(ends).toEqual(['clean']);
  });

  it('pipeThrough(new TextDecoderStream()), as the SDK reads an SSE body', async () => {
    const { events, ends, fetch } = observed();
    const reader = (await fetch('/sse')).body!.pipeThrough(new TextDecoderStream()).getReader();
    let got = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) got += r.value;
    expect(got).toBe(wholeBody('/sse'));
    expect(events).toEqual(['one', 'two', 'three']);
    expect(ends).toEqual(['clean']);
  });

  it('pipeTo with preventClose: the destination stays open, the source unlocked and ended', async () => {
    const { events, ends, fetch } = observed();
    const body = (await fetch('/sse')).body!;
    const chunks: Uint8Array[] = [];
    let closed = false;
    const destination = new WritableStream<Uint8Array>({
      write: (chunk) => void chunks.push(chunk),
      close: () => void (closed = true),
    });
    await body.pipeTo(destination, { preventClose: true });
    expect(text(chunks)).toBe(wholeBody('/sse'));
    expect(closed).toBe(false);
    expect(body.locked).toBe(false);
    expect(destination.locked).toBe(false);
    await destination.getWriter().close();
    expect(closed).toBe(true);
    expect(events).toEqual(['one', 'two', 'three']);
    expect(ends).toEqual(['clean']);
  });

  it('pipeTo honours backpressure: no chunk is read before the destination is ready', async () => {
    const { ends, fetch } = observed();
    const body = (await fetch('/sse')).body!;
    const writes: string[] = [];
    let release: () => void = () => undefined;
    const slow = new WritableStream<Uint8Array>(
      {
        write: (chunk) => {
          writes.push(Buffer.from(chunk).toString('utf8'));
          return new Promise<void>((resolve) => (release = resolve));
        },
      },
      { highWaterMark: 1 },
    );
    const piping = body.pipeTo(slow);
    await delay(100);
    // The first write waits: one more chunk fills the queue, nothing further is read from the body.
    expect(writes.length).toBe(1);
    expect(ends).toEqual([]);
    for (let i = 0; i < 10 && ends.length === 0; i++) {
      release();
      await delay(20);
    }
    release();
    await piping;
    expect(writes.join('')).toBe(wholeBody('/sse'));
    expect(ends).toEqual(['clean']);
  });

  it('a destination that fails cancels the body (an abort), unless preventCancel', async () => {
    for (const preventCancel of [false, true]) {
      const { ends, fetch } = observed();
      const body = (await fetch('/open')).body!;
      const failing = new WritableStream<Uint8Array>({
        write: () => {
          throw new Error('disk full');
        },
      });
      await expect(body.pipeTo(failing, { preventCancel })).rejects.toThrow('disk full');
      expect(body.locked).toBe(false);
      expect(ends).toEqual(preventCancel ? [] : ['abort']);
      if (preventCancel) {
        await body.cancel('done');
        expect(ends).toEqual(['abort']);
      }
    }
  });

  it("pipeTo's signal cancels the body and aborts the destination", async () => {
    const { ends, fetch } = observed();
    const body = (await fetch('/open')).body!;
    let aborted: unknown;
    const destination = new WritableStream<Uint8Array>({ abort: (reason) => void (aborted = reason) });
    const controller = new AbortController();
    const piping = body.pipeTo(destination, { signal: controller.signal });
    await delay(50);
    controller.abort(new Error('stop'));
    await expect(piping).rejects.toThrow('stop');
    expect((aborted as Error).message).toBe('stop');
    expect(ends).toEqual(['abort']);
  });

  it('cancel from the reader side ends the body as an abort', async () => {
    const { events, ends, fetch } = observed();
    const reader = (await fetch('/open')).body!.getReader();
    expect(text([(await reader.read()).value!])).toBe('data: one\n\n');
    await reader.cancel('enough');
    expect(events).toEqual(['one']);
    expect(ends).toEqual(['abort']);
    expect(await reader.read()).toEqual({ done: true, value: undefined });
    expect(ends).toEqual(['abort']);
  });

  it('an erroring source: the read rejects and the body ended as an error, once', async () => {
    const { events, ends, fetch } = observed();
    const response = await fetch('/cut');
    await expect(response.text()).rejects.toThrow();
    expect(events).toEqual(['one']);
    expect(ends).toEqual(['error']);
  });

  it('an erroring source seen through pipeThrough errors the readable side', async () => {
    const { ends, fetch } = observed();
    const reader = (await fetch('/cut')).body!.pipeThrough(new TextDecoderStream()).getReader();
    await expect(readAll(reader as never)).rejects.toThrow();
    expect(ends).toEqual(['error']);
  });

  it('an aborted fetch: text() refuses at once, and the body ends as an abort', async () => {
    const observer = new WireObserver();
    const seen: StreamEnd[] = [];
    observer.addListener({ onStreamEnd: (_r, _s, how) => void seen.push(how) });
    const controller = new AbortController();
    const response = await observer.wrap()(server.server.url + '/open', { signal: controller.signal });
    controller.abort();
    await expect(response.text()).rejects.toThrow(/abort/i);
    expect(seen).toEqual(['abort']);
  });

  it('a removed event shrinks its chunk: the reader gets the kept events only', async () => {
    const { events, ends, fetch } = observed();
    const chunks = await readAll((await fetch('/shrink')).body!.getReader());
    expect(text(chunks)).toBe('data: a\n\ndata: b\n\n');
    expect(events).toEqual(['a', 'drop', 'b']);
    expect(ends).toEqual(['clean']);
  });

  it('a chunk whose every event is removed yields no empty chunk: the read goes on', async () => {
    const { events, ends, fetch } = observed();
    const chunks = await readAll((await fetch('/all-removed')).body!.getReader());
    expect(chunks.every((chunk) => chunk.length > 0)).toBe(true);
    expect(text(chunks)).toBe('data: c\n\n');
    expect(events).toEqual(['drop 1', 'drop 2', 'c']);
    expect(ends).toEqual(['clean']);
  });

  it('the rest of an unfinished event at the end is returned before done, with a filtering listener', async () => {
    const { events, ends, fetch } = observed();
    const chunks = await readAll((await fetch('/tail')).body!.getReader());
    expect(text(chunks)).toBe('data: a\n\ndata: tail');
    expect(events).toEqual(['a', 'drop']);
    expect(ends).toEqual(['clean']);
  });

  it('Readable.fromWeb, async iteration, tee() and clone() read through the tap once', async () => {
    {
      const { events, ends, fetch } = observed();
      const chunks: Buffer[] = [];
      for await (const chunk of Readable.fromWeb((await fetch('/shrink')).body! as never)) chunks.push(chunk as Buffer);
      expect(text(chunks)).toBe('data: a\n\ndata: b\n\n');
      expect([events, ends]).toEqual([['a', 'drop', 'b'], ['clean']]);
    }
    {
      const { events, ends, fetch } = observed();
      const chunks: Uint8Array[] = [];
      for await (const chunk of (await fetch('/shrink')).body! as unknown as AsyncIterable<Uint8Array>)
        chunks.push(chunk);
      expect(text(chunks)).toBe('data: a\n\ndata: b\n\n');
      expect([events, ends]).toEqual([['a', 'drop', 'b'], ['clean']]);
    }
    {
      const { events, ends, fetch } = observed();
      const [left, right] = (await fetch('/shrink')).body!.tee();
      const [a, b] = await Promise.all([readAll(left.getReader()), readAll(right.getReader())]);
      expect([text(a), text(b)]).toEqual(['data: a\n\ndata: b\n\n', 'data: a\n\ndata: b\n\n']);
      expect([events, ends]).toEqual([['a', 'drop', 'b'], ['clean']]);
    }
    {
      const { events, ends, fetch } = observed();
      const response = await fetch('/shrink');
      const copy = response.clone();
      expect([await response.text(), await copy.text()]).toEqual(['data: a\n\ndata: b\n\n', 'data: a\n\ndata: b\n\n']);
      expect([events, ends]).toEqual([['a', 'drop', 'b'], ['clean']]);
    }
  });

  it('one wrapped fetch around another: each observer sees every event it is given once, the outer what the inner kept', async () => {
    const inner = new WireObserver();
    const outer = new WireObserver();
    const seen = { inner: [] as string[], outer: [] as string[] };
    const ends = { inner: [] as StreamEnd[], outer: [] as StreamEnd[] };
    inner.addListener(
      {
        onEvent: (event) => {
          seen.inner.push(event.sse!.data);
          return !event.sse!.data.includes('drop');
        },
        onStreamEnd: (_r, _s, how) => void ends.inner.push(how),
      },
      { filters: true },
    );
    outer.addListener({
      onEvent: (event) => void seen.outer.push(event.sse!.data),
      onStreamEnd: (_r, _s, how) => void ends.outer.push(how),
    });
    const response = await outer.wrap(inner.wrap())(server.server.url + '/shrink');
    expect(response.url).toBe(server.server.url + '/shrink');
    expect(await response.text()).toBe('data: a\n\ndata: b\n\n');
    expect(seen).toEqual({ inner: ['a', 'drop', 'b'], outer: ['a', 'b'] });
    expect(ends).toEqual({ inner: ['clean'], outer: ['clean'] });
  });

  it('a BYOB reader gets the kept bytes, copied into its views', async () => {
    const { events, ends, fetch } = observed();
    const reader = (await fetch('/shrink')).body!.getReader({ mode: 'byob' });
    const chunks: Uint8Array[] = [];
    for (;;) {
      const { done, value } = await reader.read(new Uint8Array(4));
      if (done) break;
      chunks.push(value.slice());
    }
    expect(text(chunks)).toBe('data: a\n\ndata: b\n\n');
    expect([events, ends]).toEqual([['a', 'drop', 'b'], ['clean']]);
  });
});

/*
 * A body over drops its entry in the watched bodies' WeakMap (so the table shrinks): whatever the
 * application does with the stream or its Response afterwards behaves as on an unwatched body read to
 * its end, throws nothing new, and tells no second end.
 */
describe('a watched body read to its end, its state dropped', () => {
  /** What `act` gives, or the name of what it throws or rejects with. */
  async function outcome(act: () => unknown): Promise<unknown> {
    try {
      const value: unknown = await act();
      return { value: value === undefined ? 'undefined' : value };
    } catch (error) {
      return { error: (error as Error).name };
    }
  }

  /** A response of `path` read to its end by a reader that then released its lock. */
  async function readToEnd(fetch: (path: string) => Promise<Response>, path: string) {
    const response = await fetch(path);
    const reader = response.body!.getReader();
    const got = text(await readAll(reader));
    reader.releaseLock();
    return { response, got };
  }

  const afterTheEnd: Record<string, (response: Response) => unknown> = {
    'getReader().read()': (r) => r.body!.getReader().read(),
    'a BYOB read': (r) => r.body!.getReader({ mode: 'byob' }).read(new Uint8Array(4)),
    'cancel()': (r) => r.body!.cancel(new Error('late')),
    'reader.cancel()': (r) => r.body!.getReader().cancel(new Error('late')),
    'pipeTo()': (r) => r.body!.pipeTo(new WritableStream()),
    'pipeThrough()': async (r) => text(await readAll(r.body!.pipeThrough(new TransformStream()).getReader())),
    'tee()': async (r) => (await Promise.all(r.body!.tee().map((s) => readAll(s.getReader())))).map(text),
    'async iteration': async (r) => {
      const chunks: Uint8Array[] = [];
      for await (const chunk of r.body! as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
      return text(chunks);
    },
    'text()': (r) => r.text(),
    'arrayBuffer()': (r) => r.arrayBuffer(),
    'clone()': (r) => r.clone().bodyUsed,
  };

  for (const [name, act] of Object.entries(afterTheEnd))
    it(`${name} after the end does what it does on an unwatched body`, async () => {
      const { events, ends, fetch } = observed();
      const watched = await readToEnd(fetch, '/tail');
      const plain = await readToEnd((path) => globalThis.fetch(server.server.url + path), '/tail');
      expect([watched.got, plain.got]).toEqual(['data: a\n\ndata: tail', wholeBody('/tail')]);
      expect(await outcome(() => act(watched.response))).toEqual(await outcome(() => act(plain.response)));
      expect(events).toEqual(['a', 'drop']);
      expect(ends).toEqual(['clean']);
    });

  it('a body read to its end by text(), then cancelled and cloned: the same refusals as unwatched', async () => {
    const { ends, fetch } = observed();
    const watched = await fetch('/sse');
    const plain = await globalThis.fetch(server.server.url + '/sse');
    expect([await watched.text(), await plain.text()]).toEqual([wholeBody('/sse'), wholeBody('/sse')]);
    for (const act of [afterTheEnd['cancel()']!, afterTheEnd['clone()']!, afterTheEnd['text()']!])
      expect(await outcome(() => act(watched))).toEqual(await outcome(() => act(plain)));
    expect(ends).toEqual(['clean']);
  });

  it('a wrapped fetch around one whose body had ended: the outer reads it empty, each ends once', async () => {
    const inner = observed();
    const outer = new WireObserver();
    const outerEnds: StreamEnd[] = [];
    outer.addListener({ onStreamEnd: (_r, _s, how) => void outerEnds.push(how) });
    const fetch = outer.wrap(async (url) => (await readToEnd(() => inner.fetch('/sse'), String(url))).response);
    const response = await fetch(server.server.url + '/sse');
    expect(await response.text()).toBe('');
    expect(inner.ends).toEqual(['clean']);
    expect(outerEnds).toEqual(['clean']);
  });
});
