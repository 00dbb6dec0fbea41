import { afterEach, describe, expect, it } from 'vitest';
import { WireObserver } from '../src/index.js';
import type { FetchLike } from '../src/index.js';
import { sseServerPerFile } from './helpers/sse-server.js';
import { initialize, post } from './helpers/requests.js';

const sse = sseServerPerFile();

/** The test server has no DELETE: answered here with a real 200 response. */
const withDelete: FetchLike = (input, init) =>
  init?.method === 'DELETE' ? Promise.resolve(new Response(null, { status: 200 })) : globalThis.fetch(input, init);

/**
 * Counts the entries every Map and Set iteration yields while it is installed: the work a release does
 * over its tables, whatever structure it walks them by, and never a time.
 */
function countIterations(): { visited(): number; restore(): void } {
  let visited = 0;
  const originals: [object, PropertyKey, unknown][] = [];
  const wrap = (proto: object, name: PropertyKey) => {
    const original = Reflect.get(proto, name) as (this: unknown) => Iterator<unknown>;
    originals.push([proto, name, original]);
    Reflect.set(proto, name, function (this: unknown) {
      const it = original.call(this);
      const next = it.next.bind(it);
      return Object.assign(Object.create(Object.getPrototypeOf(it) as object) as Iterator<unknown>, {
        next() {
          const step = next();
          if (!step.done) visited++;
          return step;
        },
        [Symbol.iterator]() {
          return this;
        },
      });
    });
  };
  for (const name of ['keys', 'values', 'entries', Symbol.iterator]) {
    wrap(Map.prototype, name);
    wrap(Set.prototype, name);
  }
  return {
    visited: () => visited,
    restore: () => {
      for (const [proto, name, original] of originals.reverse()) Reflect.set(proto, name, original);
    },
  };
}

let restore: (() => void) | undefined;
afterEach(() => restore?.());

describe('a DELETE costs what its session holds', () => {
  it("visits the session's own request keys, not every key the observer holds", async () => {
    const observer = new WireObserver();
    const fetch = observer.wrap(withDelete);
    // Another session's requests fill the request map: a batch of 3,000, each a record until answered.
    const others = Array.from({ length: 3000 }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'ping' }));
    const batch = await fetch(sse.server.url, { ...post({}, 'other-session'), body: JSON.stringify(others) });
    await batch.body?.cancel();
    const sessionId = await initialize(fetch, sse.server.url);
    await (
      await fetch(sse.server.url, post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} }, sessionId))
    ).text();
    const unread = await fetch(
      sse.server.url,
      post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: {} }, sessionId),
    );
    const held = observer.stats().requests;
    expect(held).toBeGreaterThanOrEqual(3000);

    const counter = countIterations();
    restore = counter.restore;
    await fetch(sse.server.url, { method: 'DELETE', headers: { 'mcp-session-id': sessionId } });
    const visited = counter.visited();
    counter.restore();
    restore = undefined;

    // The session's request in flight went with it; the other session's stayed.
    expect(observer.stats().requests).toBe(held - 1);
    expect(observer.getRequest(sessionId, 2)).toBeUndefined();
    expect(observer.getRequest('other-session', 3000)).toBeDefined();
    // A scan of the maps would visit every one of the 3,000 keys; the session's index, its own few.
    expect(visited).toBeLessThan(100);
    await unread.body?.cancel();
  });
});
