import { describe, expect, it } from 'vitest';
import { WireObserver } from '../src/index.js';
import { SCRIPTED_SESSION, result, scriptedServerPerFile, sse } from './helpers/scripted-server.js';

// A session's recent streams: once full, the oldest leaves and the rest move down one, in the same array
// (no new array of streamsPerSession a stream); what leaves keeps its released requests' digests.

const { call } = scriptedServerPerFile();

describe('a session’s recent streams', () => {
  it('hold the newest streamsPerSession streams in order, and a stream that left keeps its requests’ digests', async () => {
    const observer = new WireObserver({ streamsPerSession: 3 });
    const terminals: { duplicate: boolean; conflict: boolean }[] = [];
    observer.addListener({ onEvent: (event) => void terminals.push(...event.terminals) });
    const fetch = observer.wrap();
    let full: unknown;
    for (let id = 1; id <= 7; id++) {
      await call(fetch, id, [sse({ id: `e${id}`, data: result(id, `answer ${id}`) })]);
      const streams = observer.getSession(SCRIPTED_SESSION)!.streams;
      const carried = streams.map((stream) => stream.requests.map((record) => record.id));
      const held = Math.min(id, 3);
      expect(carried).toEqual(Array.from({ length: held }, (_, i) => [String(id - held + 1 + i)]));
      // Full from the third stream on: the same array since.
      if (id === 3) full = streams;
      if (id > 3) expect(streams).toBe(full);
    }
    // Requests 1 to 4 left with their streams: what is kept of them still judges a late terminal.
    for (let id = 1; id <= 4; id++) {
      const kept = observer.getRequest(SCRIPTED_SESSION, id)!;
      expect([kept.released, kept.finished]).toEqual([true, true]);
    }
    terminals.length = 0;
    await call(fetch, 99, [
      sse({ id: 'x1', data: result(2, 'answer 2') }),
      sse({ id: 'x2', data: result(3, 'another answer') }),
    ]);
    expect(terminals.map((t) => [t.duplicate, t.conflict])).toEqual([
      [true, false],
      [false, true],
    ]);
  });

  it('with streamsPerSession 0 keep none: each stream leaves as it opens', async () => {
    const observer = new WireObserver({ streamsPerSession: 0 });
    const fetch = observer.wrap();
    for (let id = 1; id <= 3; id++) {
      await call(fetch, id, [sse({ id: `e${id}`, data: result(id, `answer ${id}`) })]);
      expect(observer.getSession(SCRIPTED_SESSION)!.streams).toEqual([]);
    }
  });
});
