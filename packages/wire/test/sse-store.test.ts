// The scanner gathers an event carried over chunks in a buffer it does not zero (sse.ts, `storeOf`):
// each of its bytes must be written before it is read. Events of every size (short ones, long ones that
// make the buffer grow, a short one after a long one that makes it shrink) fed in chunks of random sizes
// must come out as they went in, their raw bytes giving back the input byte for byte: a byte of stale
// memory in an event's data or raw bytes fails it.
import { describe, expect, it } from 'vitest';
import { SseParser } from '../src/sse.js';
import type { SseEvent } from '../src/sse.js';

/** Deterministic PRNG so that a failing chunking can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

describe('SseScanner, carried bytes', () => {
  it('gives back every event whole, whatever the chunks, through growing and shrinking buffers', () => {
    const next = random(40);
    const datas: string[] = [];
    let text = '';
    for (let i = 0; i < 40; i++) {
      // Mostly short events, some of 20–60 KB (past the 16 KiB the smallest buffer holds).
      const length = next() < 0.15 ? 20_000 + Math.floor(next() * 40_000) : 1 + Math.floor(next() * 200);
      const data = String.fromCharCode(...Array.from({ length: 64 }, (_, k) => 0x41 + ((i + k) % 26)))
        .repeat(Math.ceil(length / 64))
        .slice(0, length);
      datas.push(data);
      text += `id: e${i}\n${next() < 0.3 ? ': ping\n' : ''}data: ${data}\n\n`;
    }
    const bytes = Buffer.from(text, 'latin1');
    for (let round = 0; round < 20; round++) {
      // Garbage in memory that freed buffers may hand back.
      for (let g = 0; g < 8; g++) Buffer.allocUnsafeSlow(64 * 1024).fill(0xaa);
      const events: SseEvent[] = [];
      const parser = new SseParser((event) => events.push(event));
      let from = 0;
      while (from < bytes.length) {
        const size = next() < 0.5 ? 1 + Math.floor(next() * 64) : 1 + Math.floor(next() * 40_000);
        // A copy, as a body's chunks are: the parser may keep no view of the caller's buffer.
        parser.push(Uint8Array.from(bytes.subarray(from, from + size)));
        from += size;
      }
      const rest = parser.end();
      expect(rest.length).toBe(0);
      expect(events.map((e) => e.id)).toEqual(datas.map((_, i) => `e${i}`));
      expect(events.map((e) => e.data)).toEqual(datas);
      expect(Buffer.concat(events.map((e) => e.raw)).equals(bytes)).toBe(true);
    }
  });
});
