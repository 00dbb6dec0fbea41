import { describe, expect, it } from 'vitest';
import { hashOfId } from '../src/id-hash.js';
import { SseScanner } from '../src/sse.js';

/** Each event's id and the hash the scanner computed while reading it. */
function scanIds(text: string): Array<[string | undefined, number]> {
  const seen: Array<[string | undefined, number]> = [];
  const scanner = new SseScanner({ event: (scan) => seen.push([scan.id, scan.idHash]) });
  scanner.push(new TextEncoder().encode(text));
  return seen;
}

describe('SseScanner id hash', () => {
  it('is hashOfId of the id, for ASCII, long and non-ASCII ids', () => {
    const ids = ['7-0', 'a-much-longer-event-id-than-thirteen', 'é-1', '流-2'];
    const seen = scanIds(ids.map((id) => `id: ${id}\ndata: x\n\n`).join(''));
    expect(seen).toEqual(ids.map((id) => [id, hashOfId(id)]));
    // Known value: FNV-1a of "7-0" cut to 30 bits.
    expect(hashOfId('7-0')).toBe(0x06fbde63);
  });

  it('keeps the previous id and its hash when a later id line holds NUL, and is 0 without an id', () => {
    expect(scanIds('id: a\nid: b\0c\ndata: x\n\ndata: y\n\n')).toEqual([
      ['a', hashOfId('a')],
      [undefined, 0],
    ]);
  });

  it('reads ids of every length, and ignores one with NUL or hashes one not ASCII at any place in it', () => {
    for (let length = 0; length <= 21; length++) {
      const id = 'abcdefghijklmnopqrstuvwxyz'.slice(0, length);
      expect(scanIds(`id: ${id}\ndata: x\n\n`)).toEqual([length === 0 ? ['', hashOfId('')] : [id, hashOfId(id)]]);
      for (let at = 0; at < length; at++) {
        const nul = `${id.slice(0, at)}\0${id.slice(at + 1)}`;
        // The NUL line is ignored: the event keeps the id set before it in the same event.
        expect(scanIds(`id: before\nid: ${nul}\ndata: x\n\n`)).toEqual([['before', hashOfId('before')]]);
        const wide = `${id.slice(0, at)}é${id.slice(at + 1)}`;
        expect(scanIds(`id: ${wide}\ndata: x\n\n`)).toEqual([[wide, hashOfId(wide)]]);
      }
    }
  });

  it('tells a NUL in an id from one elsewhere in the chunk (data, an earlier or a later event)', () => {
    expect(
      scanIds('data: a\0b\nid: one-long-id-0001\n\nid: two\0x\ndata: y\n\nid: three-long-id\ndata: \0\n\n'),
    ).toEqual([
      ['one-long-id-0001', hashOfId('one-long-id-0001')],
      [undefined, 0],
      ['three-long-id', hashOfId('three-long-id')],
    ]);
  });

  it('reads the same ids and hashes whatever byte the chunks are split at', () => {
    const text =
      'id: b8d4ae80.1.0f6c3e2a-5b1d-4c8e-9a7f-3d2e1b0c9a8f\r\ndata: x\r\n\r\nid: n\0ul\rdata: y\r\rid: é-2\ndata: z\n\n';
    const whole = scanIds(text);
    expect(whole.map(([id]) => id)).toEqual(['b8d4ae80.1.0f6c3e2a-5b1d-4c8e-9a7f-3d2e1b0c9a8f', undefined, 'é-2']);
    const bytes = new TextEncoder().encode(text);
    for (let cut = 1; cut < bytes.length; cut++) {
      const seen: Array<[string | undefined, number]> = [];
      const scanner = new SseScanner({ event: (scan) => seen.push([scan.id, scan.idHash]) });
      scanner.push(bytes.subarray(0, cut));
      scanner.push(bytes.subarray(cut));
      expect(seen).toEqual(whole);
    }
  });
});
