import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Detector } from '@resumewatch/detector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeState, openStateFile, type StatePart } from '../src/doors/state-file.js';
import { seedScenario } from '../../detector/test/helpers/spans.js';

// A part that gives its section as text in steps (the gateway's wire observer) is written step by step:
// each step's text goes to the file before the next step is taken, and the event loop runs between
// two, so a snapshot's synchronous work is one step's, not the whole section's. The file reads back as
// one written at once.

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'resumewatch-state-steps-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const ROWS = 40;

/** A part whose section is `{"rows":[0,…,ROWS-1]}` in one step a row, noting whether the loop ran before each step. */
function steppedPart(): StatePart & { loopRanBefore: boolean[]; restored: unknown[] } {
  const loopRanBefore: boolean[] = [];
  const restored: unknown[] = [];
  return {
    loopRanBefore,
    restored,
    restore(section) {
      restored.push(section);
      return 'restored the part';
    },
    snapshot: () => ({ rows: Array.from({ length: ROWS }, (_, i) => i) }),
    *snapshotText() {
      let ran = true;
      for (let i = 0; i < ROWS; i++) {
        loopRanBefore.push(ran);
        // Set by the event loop, once this step has returned: true only if the loop turned before the next one.
        ran = false;
        setImmediate(() => (ran = true));
        yield i === 0 ? `{"rows":[${i}` : `,${i}`;
      }
      yield ']}';
    },
  };
}

describe('a section written in steps', () => {
  it('each step is written with the event loop run between two; the file reads back whole', async () => {
    const file = join(dir, 'steps.state');
    const config = { stateFile: file, snapshotIntervalMs: 0 };
    const detector = new Detector({ maxRequests: 16, dedupeCapacity: 64 });
    for (const s of seedScenario({ session: 'steps', request: 1 }, 3)) detector.ingest(s);
    const door = await openStateFile(config, detector, () => undefined);
    const part = steppedPart();
    door.keepSection('stepped', part);
    await door.snapshot();
    expect(part.loopRanBefore).toEqual(Array<boolean>(ROWS).fill(true));

    // The detector's part as encodeState writes it, the section beside it.
    expect(decodeState(await readFile(file))).toEqual(detector.exportState());
    const next = steppedPart();
    const lines: string[] = [];
    const again = await openStateFile(config, new Detector({ maxRequests: 16, dedupeCapacity: 64 }), (l) =>
      lines.push(l),
    );
    again.keepSection('stepped', next);
    expect(next.restored).toEqual([{ rows: Array.from({ length: ROWS }, (_, i) => i) }]);
    expect(lines).toEqual([`restored ${detector.stats().tracked} tracked requests from ${file}`, 'restored the part']);
  });
});
