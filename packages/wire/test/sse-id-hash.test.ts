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
});
