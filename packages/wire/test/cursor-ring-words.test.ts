// The cursor ring's write of an id read four bytes at a time from the scanner's DataView of the chunk
// (`CursorRing.addWords`, `SseScanner.idWords`): every byte must land whatever the id's length, its
// place in the chunk (split across chunks, at a chunk's very end) and the arena's wrap.
import { describe, expect, it } from 'vitest';
import { CursorRing } from '../src/cursor-ring.js';
import { hashOfId } from '../src/id-hash.js';
import type { StreamRecord } from '../src/index.js';
import { SseScanner } from '../src/sse.js';

const stream = (id: string) => ({ id, requests: [], kind: 'request' }) as unknown as StreamRecord;

/** A ring fed as the observer feeds it: the id's bytes from the scanner's view, or its text when made. */
function ringFed(ring: CursorRing, on: StreamRecord): SseScanner {
  let position = 0;
  return new SseScanner({
    event(scan) {
      if (!scan.hasId) return;
      position++;
      const made = scan.madeId;
      const words = made === undefined ? scan.idWords() : undefined;
      if (words !== undefined) ring.addWords(scan.idHash, words, scan.idByteStart, scan.idByteEnd, on, position);
      else if (made === undefined)
        ring.addBytes(scan.idHash, scan.bytes, scan.idByteStart, scan.idByteEnd, on, position);
      else ring.addText(scan.idHash, made, on, position);
    },
  });
}

describe('CursorRing.addWords', () => {
  it('keeps ids of every length at every offset of the source, in a short arena and a long one, across its end', () => {
    // 40 slots: the arena grows past WORD_VIEW_BYTES (written by words), and wraps many times over.
    const ring = new CursorRing(40);
    const a = stream('a');
    const id = (n: number, k: number) => `${n}:${k}.`.padEnd(n, String.fromCharCode(0x41 + (k % 26)));
    let position = 0;
    for (let round = 0; round < 3; round++)
      for (let n = 1; n <= 70; n++) {
        const k = round * 100 + n;
        const text = `${'z'.repeat(k % 7)}${id(n, k)}\n`;
        const bytes = new TextEncoder().encode(text);
        // A view over part of a larger buffer: the DataView's offsets are the chunk's.
        const backing = new Uint8Array(bytes.length + 5);
        backing.set(bytes, 5);
        const view = new DataView(backing.buffer, 5, bytes.length);
        ring.addWords(hashOfId(id(n, k)), view, k % 7, (k % 7) + id(n, k).length, a, ++position);
        // The id just written compares whole, byte for byte (one byte changed at its end is another id).
        expect(ring.positionOn(id(n, k), a)).toBe(position);
        expect(ring.get(`${id(n, k).slice(0, -1)}!`)).toBeUndefined();
      }
    // The latest ids are still whole after the arena wrapped; the oldest lost their text.
    for (let n = 66; n <= 70; n++) expect(ring.positionOn(id(n, 200 + n), a)).toBe(140 + n);
    expect(ring.get(id(10, 10))).toBeUndefined();
  });

  it('keeps the ids a scanner reads, split across chunks at every byte, at a chunk’s very end, and carried', () => {
    const ids = Array.from({ length: 30 }, (_, n) => `b8d4ae80.${n}.254b2bb7${'x'.repeat(n)}`);
    const body = ids.map((id) => `event: message\nid: ${id}\ndata: {"n":1}\n\n`).join('');
    const bytes = new TextEncoder().encode(body);
    for (let split = 1; split < bytes.length; split += 1) {
      const ring = new CursorRing(64);
      const a = stream('a');
      const scanner = ringFed(ring, a);
      // Two chunks, the second a plain Uint8Array at an offset in its buffer.
      scanner.push(Buffer.from(bytes.subarray(0, split)));
      const rest = new Uint8Array(bytes.length - split + 3);
      rest.set(bytes.subarray(split), 3);
      scanner.push(rest.subarray(3));
      for (let n = 0; n < ids.length; n++) expect(ring.positionOn(ids[n]!, a), `split ${split}, id ${n}`).toBe(n + 1);
    }
  });

  it('keeps an id that ends its chunk, with its line end in the next one', () => {
    const ring = new CursorRing(8);
    const a = stream('a');
    const scanner = ringFed(ring, a);
    const id = 'an-id-longer-than-thirteen-bytes';
    scanner.push(new TextEncoder().encode(`data: x\nid: ${id}`));
    scanner.push(new TextEncoder().encode('\n\n'));
    expect(ring.positionOn(id, a)).toBe(1);
  });
});
