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

  it('a snapshot asked for while one is under way (the shutdown during a periodic one): the one under way stops at its next step, the newer is written whole', async () => {
    const file = join(dir, 'superseded.state');
    const lines: string[] = [];
    const door = await openStateFile({ stateFile: file, snapshotIntervalMs: 0 }, new Detector(), (l) => lines.push(l));
    const pulled: number[] = [];
    let asked: Promise<void> | undefined;
    let takes = 0;
    door.keepSection('stepped', {
      restore: () => 'restored',
      snapshot: () => null,
      *snapshotText() {
        const take = ++takes;
        for (let i = 0; i < ROWS; i++) {
          pulled.push(take);
          // The first write's fifth step: a second snapshot is asked for.
          if (take === 1 && i === 4) asked = door.snapshot();
          yield i === 0 ? `{"take":${take},"rows":[${i}` : `,${i}`;
        }
        yield ']}';
      },
    });
    await door.snapshot();
    await asked;
    // The first stopped after the step during which the second was asked for; the second ran whole.
    expect(pulled.filter((t) => t === 1)).toHaveLength(5);
    expect(pulled.filter((t) => t === 2)).toHaveLength(ROWS);
    expect(lines).toEqual([]);
    const back: unknown[] = [];
    const again = await openStateFile({ stateFile: file, snapshotIntervalMs: 0 }, new Detector(), () => undefined);
    again.keepSection('stepped', { restore: (section) => (back.push(section), 'restored'), snapshot: () => null });
    expect(back).toEqual([{ take: 2, rows: Array.from({ length: ROWS }, (_, i) => i) }]);
  });
});
