import { Session } from 'node:inspector';
import { describe, expect, it } from 'vitest';
import { digestOfTerminal } from '../src/index.js';
import type { JsonRpcResponse } from '../src/index.js';

// The terminal digest walks with a stack it keeps between walks (no five arrays a terminal): the digests
// stay what they were, a walk never shares its frames with another, and the walk allocates little.

const response = (result: unknown): JsonRpcResponse => ({ jsonrpc: '2.0', id: 1, result }) as JsonRpcResponse;

function nested(levels: number): unknown {
  let value: unknown = { leaf: 'x' };
  for (let i = 0; i < levels; i++) value = { a: [value, i] };
  return value;
}

const ANSWER = {
  content: [{ type: 'text', text: 'The weather' }],
  structuredContent: { city: 'Lisbon', t: 21.5 },
  isError: false,
};

/** Digests of these values before the stack was kept (a fresh stack each walk). */
const PINNED: [unknown, number][] = [
  [ANSWER, 3158930289],
  [nested(100), 1852512671],
  [nested(3), 2181140875],
  [[1, [2, [3, { b: null, c: true }]]], 3901740557],
  ['plain', 3093051278],
  [7, 2510700983],
];

describe('the terminal digest’s kept stack', () => {
  it('gives the digests a fresh stack gave, in any order of deep and shallow walks', () => {
    for (let round = 0; round < 3; round++)
      for (const [value, digest] of round === 1 ? [...PINNED].reverse() : PINNED)
        expect(digestOfTerminal(response(value))).toBe(digest);
    expect(digestOfTerminal({ jsonrpc: '2.0', id: 1, error: { code: -1, message: 'm' } } as never)).toBe(4241723472);
  });

  it('gives a walk begun inside another (a getter digesting) its own frames', () => {
    let inner: number | undefined;
    const outer = {
      content: [{ type: 'text', text: 'The weather' }],
      structuredContent: {
        city: 'Lisbon',
        get t() {
          inner = digestOfTerminal(response(nested(100)));
          return 21.5;
        },
      },
      isError: false,
    };
    expect(digestOfTerminal(response(outer))).toBe(3158930289);
    expect(inner).toBe(1852512671);
  });

  it('is unharmed by a walk that threw midway', () => {
    const throwing = {
      a: [
        { b: 1 },
        {
          get c(): number {
            throw new Error('getter');
          },
        },
      ],
    };
    expect(() => digestOfTerminal(response(throwing))).toThrow('getter');
    for (const [value, digest] of PINNED) expect(digestOfTerminal(response(value))).toBe(digest);
  });

  it('allocates under 400 bytes for a tool answer of two objects (about 240; with a fresh stack of five arrays a walk, about 1,160)', async () => {
    const value = response(ANSWER);
    const walks = 20_000;
    for (let i = 0; i < walks; i++) digestOfTerminal(value);
    const bytes = await allocatedBy(() => {
      for (let i = 0; i < walks; i++) digestOfTerminal(value);
    });
    // What is left is Object.keys of each of the two objects.
    expect(bytes / walks).toBeLessThan(400);
  });
});

/** Bytes `work` allocated, by V8's sampling heap profiler, counting what collections freed meanwhile. */
async function allocatedBy(work: () => void): Promise<number> {
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) =>
      session.post(method, params ?? {}, (error, result) => (error ? reject(error) : resolve(result))),
    );
  try {
    await post('HeapProfiler.startSampling', {
      samplingInterval: 64,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    work();
    const { profile } = (await post('HeapProfiler.stopSampling')) as { profile: { head: ProfileNode } };
    let bytes = 0;
    const pending = [profile.head];
    for (let node = pending.pop(); node; node = pending.pop()) {
      bytes += node.selfSize;
      pending.push(...node.children);
    }
    return bytes;
  } finally {
    session.disconnect();
  }
}

interface ProfileNode {
  selfSize: number;
  children: ProfileNode[];
}
