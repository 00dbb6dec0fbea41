import { describe, expect, it } from 'vitest';
import {
  BrokenRequests,
  canonicalJson,
  isInputRound,
  requestArgumentsDigest,
  requestWorkDigest,
} from '../src/index.js';
import type { JsonRpcRequest } from '../src/index.js';

const KEY = 'a key of sixteen bytes or more';

function call(id: number, name: string, args: unknown, extra: Record<string, unknown> = {}): JsonRpcRequest {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...extra } };
}

describe('canonicalJson', () => {
  it('sorts object keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, 1], c: null } })).toBe('{"a":{"c":null,"d":[2,1]},"b":1}');
    expect(canonicalJson({ a: 1, b: 2 })).toBe(canonicalJson({ b: 2, a: 1 }));
    expect(canonicalJson([{ y: 1, x: 2 }])).toBe('[{"x":2,"y":1}]');
  });

  it('gives, on the fast path for keys already in order, the text the sorting replacer gives', () => {
    // The reference: every object's keys sorted by the replacer, whatever their order.
    const sortedText = (value: unknown) =>
      JSON.stringify(value, (_key, member: unknown) => {
        if (member === null || typeof member !== 'object' || Array.isArray(member)) return member;
        const sorted: Record<string, unknown> = {};
        for (const k of Object.keys(member).sort()) sorted[k] = (member as Record<string, unknown>)[k];
        return sorted;
      });
    // Deterministic trees: keys in order and out of it, integer-like keys (which objects order first),
    // nesting past the fast path's depth, toJSON, a Date, a class instance, undefined members.
    let seed = 29;
    const next = (n: number) => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n;
    const KEYS = ['a', 'b', 'B', '10', '9', '', 'é', 'a b', '_'];
    const tree = (depth: number): unknown => {
      const kind = depth > 5 ? 0 : next(10);
      if (kind < 3) return [null, 1, 'x', true, undefined, -0, 1.5][next(7)];
      if (kind < 5) return Array.from({ length: next(4) }, () => tree(depth + 1));
      if (kind === 5) return { toJSON: () => ({ z: 1, y: 2 }) };
      if (kind === 6) return new Date(0);
      if (kind === 7) return Object.assign(new (class Thing {})(), { b: 1, a: 2 });
      const keys = KEYS.filter(() => next(2) === 0);
      if (next(2) === 0) keys.sort();
      return Object.fromEntries(keys.map((k) => [k, tree(depth + 1)]));
    };
    const deep = (n: number): unknown => (n === 0 ? { a: 1 } : { a: deep(n - 1), b: n });
    for (const value of [...Array.from({ length: 3000 }, () => tree(0)), deep(40), [deep(35)]])
      expect(canonicalJson(value)).toBe(sortedText(value));
  });
});

describe('requestArgumentsDigest', () => {
  const digest = (request: JsonRpcRequest, key = KEY) => requestArgumentsDigest(request, key);

  it('is one value for one method, name and arguments, whatever the id, key order, _meta or input round', () => {
    const first = digest(call(0, 'charge', { key: 'k', workMs: 5 }, { _meta: { progressToken: 0 } }));
    expect(first).toMatch(/^[0-9a-f]{32}$/);
    expect(digest(call(7, 'charge', { workMs: 5, key: 'k' }, { _meta: { progressToken: 7 } }))).toBe(first);
    expect(digest(call(8, 'charge', { key: 'k', workMs: 5 }, { inputResponses: { confirm: {} } }))).toBe(first);
  });

  it('differs with the method, the name, the arguments or the key, and never holds the raw arguments', () => {
    const first = digest(call(0, 'charge', { key: 'secret-value' }));
    expect(digest(call(0, 'refund', { key: 'secret-value' }))).not.toBe(first);
    expect(digest(call(0, 'charge', { key: 'other' }))).not.toBe(first);
    expect(
      digest({
        jsonrpc: '2.0',
        id: 0,
        method: 'prompts/get',
        params: { name: 'charge', arguments: { key: 'secret-value' } },
      }),
    ).not.toBe(first);
    expect(digest(call(0, 'charge', { key: 'secret-value' }), 'another key of sixteen bytes')).not.toBe(first);
    // The name and the arguments are not spliced into one text that two calls could share.
    expect(digest(call(0, 'a', undefined))).not.toBe(digest(call(0, '', undefined)));
    expect(first).not.toContain('secret');
  });

  it('is one value per key, whichever keys were used between (text or bytes), and not the unkeyed digest', () => {
    const request = call(0, 'charge', { key: 'k' });
    const bytes = new Uint8Array(32).fill(7);
    const first = digest(request);
    const byBytes = digest(request, bytes as unknown as string);
    expect(byBytes).not.toBe(first);
    expect(digest(request, 'another key of sixteen bytes')).not.toBe(first);
    expect(digest(request)).toBe(first);
    expect(digest(request, new Uint8Array(32).fill(7) as unknown as string)).toBe(byBytes);
    // The same bytes as text or as bytes are one key.
    expect(digest(request, Buffer.from(KEY, 'utf8') as unknown as string)).toBe(first);
    expect(first).not.toBe(requestWorkDigest(request).slice(0, 32));
  });

  it('names a resource by its uri', () => {
    const read = (uri: string): JsonRpcRequest => ({
      jsonrpc: '2.0',
      id: 1,
      method: 'resources/read',
      params: { uri },
    });
    expect(digest(read('file:///a'))).toBe(digest(read('file:///a')));
    expect(digest(read('file:///a'))).not.toBe(digest(read('file:///b')));
  });
});

describe('isInputRound', () => {
  it('is true only for a request carrying inputResponses', () => {
    expect(isInputRound(call(1, 'confirm_charge', { key: 'k' }, { inputResponses: { confirm: {} } }))).toBe(true);
    expect(isInputRound(call(0, 'confirm_charge', { key: 'k' }))).toBe(false);
    expect(isInputRound({ jsonrpc: '2.0', id: 0, method: 'ping' })).toBe(false);
  });
});

describe('BrokenRequests', () => {
  it('matches a broken request once, by digest, within its window', () => {
    let now = 0;
    const broken = new BrokenRequests<string>({ windowMs: 1000, now: () => now });
    broken.noteBroken('d1', 'first attempt');
    expect(broken.takeReissued('d2')).toBeUndefined();
    expect(broken.peek('d1')).toBe('first attempt');
    expect(broken.takeReissued('d1')).toBe('first attempt');
    // One broken request is re-issued once: a second request with the digest is a new call.
    expect(broken.takeReissued('d1')).toBeUndefined();

    broken.noteBroken('d1', 'again');
    now = 1000;
    expect(broken.takeReissued('d1')).toBeUndefined();
    expect(broken.size).toBe(0);
  });

  it('holds at most maxEntries, the oldest dropped and counted', () => {
    const broken = new BrokenRequests<number>({ maxEntries: 2 });
    for (let i = 0; i < 3; i++) broken.noteBroken(`d${i}`, i);
    expect(broken.size).toBe(2);
    expect(broken.evictions).toBe(1);
    expect(broken.peek('d0')).toBeUndefined();
    expect(broken.peek('d2')).toBe(2);
  });

  it('refuses a window that is not positive', () => {
    expect(() => new BrokenRequests({ windowMs: 0 })).toThrow(RangeError);
  });
});
