import { open, readFile, rename, unlink } from 'node:fs/promises';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { Detector, DetectorState } from '@resumewatch/detector';
import type { ResumewatchConfig } from '../config.js';

/*
 * The detector's state on disk, so that a restart loses nothing a snapshot holds:
 *   "RWSTATE1" | uint32 LE length of the JSON header | JSON header | raw bytes of every typed array
 * The header is the DetectorState with each typed array replaced by {"$ta": type, "at": offset, "n": length}
 * (offsets into the raw bytes), holes of arrays by {"$u": 1} and non-finite numbers by {"$n": "NaN"};
 * beside the detector's fields, an optional "sections" object holds other parts' state by name, each
 * versioned by its owner (the gateway's wire observer: "wire-observer"). A reader that knows no section
 * skips it; a section its owner cannot read is one line, and that part starts empty.
 * Written to a temporary file, fsynced and renamed over the old one: a crash mid-write leaves the
 * previous snapshot whole.
 */
const MAGIC = Buffer.from('RWSTATE1');

const TYPED = {
  Float64Array,
  Uint32Array,
  Int32Array,
  Uint8Array,
  Float32Array,
  Uint16Array,
  Int16Array,
  Int8Array,
} as const;
type TypedName = keyof typeof TYPED;

/** Other parts' state, by name, written beside the detector's (see the file's header). */
type Sections = Record<string, unknown>;

/** The detector's JSON header (without the sections) and the raw bytes of its typed arrays. */
function encodeParts(state: DetectorState): { header: string; blobs: Buffer[] } {
  const blobs: Buffer[] = [];
  let offset = 0;
  const header = JSON.stringify(state, replacer);
  return { header, blobs };

  function replacer(this: unknown, _key: string, value: unknown): unknown {
    if (value === undefined && Array.isArray(this)) return { $u: 1 };
    if (typeof value === 'number' && !Number.isFinite(value)) return { $n: String(value) };
    if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
      const name = value.constructor.name;
      if (!(name in TYPED)) throw new Error(`cannot save a ${name}`);
      // Copied now, synchronously: the detector goes on changing its arrays while the file is written.
      const bytes = Buffer.from(
        Uint8Array.prototype.slice.call(new Uint8Array(value.buffer, value.byteOffset, value.byteLength)),
      );
      const at = offset;
      // Keep every array aligned to 8 bytes in the file, so it can be read back as a view.
      const pad = (8 - (bytes.length % 8)) % 8;
      blobs.push(bytes, Buffer.alloc(pad));
      offset += bytes.length + pad;
      return { $ta: name, at, n: (value as unknown as { length: number }).length };
    }
    return value;
  }
}

/**
 * The JSON header's text in pieces: the detector's header with a "sections" member added, each
 * section's text as its part gives it (in steps, or one JSON value).
 */
function* headerPieces(header: string, sections: Iterable<[string, Iterable<string>]>): Generator<string> {
  let opened = false;
  for (const [name, text] of sections) {
    if (!opened) {
      // The detector's object, its closing brace replaced by the sections' member.
      yield `${header.slice(0, -1)}${header === '{}' ? '' : ','}"sections":{`;
      opened = true;
    } else yield ',';
    yield `${JSON.stringify(name)}:`;
    yield* text;
  }
  yield opened ? '}}' : header;
}

export function encodeState(state: DetectorState, sections?: Sections): Buffer {
  const { header, blobs } = encodeParts(state);
  const named = Object.entries(sections ?? {}).map(([name, value]): [string, string[]] => [name, [json(value)]]);
  const text = Buffer.from([...headerPieces(header, named)].join(''), 'utf8');
  const len = Buffer.alloc(4);
  len.writeUInt32LE(text.length);
  return Buffer.concat([MAGIC, len, text, ...blobs]);
}

/** A section's value as JSON, with the detector's encoding of holes and non-finite numbers. */
function json(value: unknown): string {
  const { header, blobs } = encodeParts(value as DetectorState);
  // Its arrays' bytes would have no place: a section is plain JSON.
  if (blobs.length > 0) throw new Error('a section holds a typed array');
  return header;
}

export function decodeState(file: Buffer): DetectorState {
  return decodeStateFile(file).state;
}

/** The detector's state and the other parts' sections, as encodeState wrote them. */
function decodeStateFile(file: Buffer): { state: DetectorState; sections: Sections } {
  if (file.length < 12 || !file.subarray(0, 8).equals(MAGIC)) throw new Error('not a resumewatch state file');
  const n = file.readUInt32LE(8);
  if (12 + n > file.length) throw new Error('truncated state file');
  const raw = file.subarray(12 + n);
  const header = JSON.parse(file.subarray(12, 12 + n).toString('utf8'), (_key, value: unknown) => {
    if (typeof value !== 'object' || value === null) return value;
    const v = value as Record<string, unknown>;
    if (v.$u === 1) return undefined;
    if (typeof v.$n === 'string') return Number(v.$n);
    if (typeof v.$ta === 'string') {
      const Type = TYPED[v.$ta as TypedName];
      const at = Number(v.at);
      const len = Number(v.n);
      if (!Type || !(at >= 0) || !(len >= 0) || at + len * Type.BYTES_PER_ELEMENT > raw.length)
        throw new Error('corrupt state file');
      const out = new Type(len);
      new Uint8Array(out.buffer).set(raw.subarray(at, at + len * Type.BYTES_PER_ELEMENT));
      return out;
    }
    return value;
  }) as DetectorState & { sections?: unknown };
  const { sections, ...state } = header;
  const named = typeof sections === 'object' && sections !== null && !Array.isArray(sections) ? sections : {};
  return { state: state as DetectorState, sections: named as Sections };
}

/** Another part's state kept in the same file (see DoorState.keepSection). */
export interface StatePart {
  /** Reads back what the file held for it, on start; returns the line to log; throws to start empty (one line). */
  restore(section: unknown): string;
  /** Its state now, for a snapshot (a plain JSON value). */
  snapshot(): unknown;
  /**
   * Its state as JSON text in steps, preferred to snapshot() when present: each step is a bounded piece
   * of synchronous work, and the writer writes its text out and lets the event loop run before the next.
   */
  snapshotText?(): Iterable<string>;
}

/** The --state-file of one detector: restore() on start, write() periodically and on shutdown. */
class StateFile {
  private writing: Promise<void> | undefined;
  /**
   * A write was asked for while one was under way (the shutdown's, during a periodic one): the one under
   * way stops at its next step, its temporary file removed and the previous file left whole, so that the
   * newer one is not kept waiting for a state it replaces.
   */
  private superseded = false;
  /** Bytes and milliseconds of the last write, for the figures. */
  lastWrite: { bytes: number; ms: number } | undefined;
  /** The other parts' sections the file held when the detector's state was loaded from it. */
  sections: Sections = {};
  /** The other parts kept in the file, by section name. */
  readonly parts = new Map<string, StatePart>();

  constructor(
    readonly path: string,
    private readonly detector: Detector,
  ) {}

  /** Reads the file back into the (fresh) detector. A missing file is a first start; a bad one is reported and set aside. */
  async restore(): Promise<{ tracked: number } | { error: string } | undefined> {
    let file: Buffer;
    try {
      file = await readFile(this.path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      return { error: `cannot read ${this.path}: ${(e as Error).message}` };
    }
    try {
      const { state, sections } = decodeStateFile(file);
      this.detector.importState(state);
      this.sections = sections;
      return { tracked: this.detector.stats().tracked };
    } catch (e) {
      // Set aside, not deleted: the next snapshot would overwrite it, and someone may want to look.
      await rename(this.path, `${this.path}.rejected`).catch(() => undefined);
      return { error: `state file ${this.path} not loaded (${(e as Error).message}); starting empty` };
    }
  }

  /** Writes a snapshot; concurrent calls share one write that starts after the one in progress. */
  write(): Promise<void> {
    if (this.writing) this.superseded = true;
    const next = (this.writing ?? Promise.resolve()).then(() => {
      this.superseded = false;
      return this.writeNow();
    });
    // What the write after this one waits for: this one settled. Its failure is the caller's (`next`),
    // never a second, unhandled rejection that would end the process.
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.writing = settled;
    void settled.then(() => {
      if (this.writing === settled) this.writing = undefined;
    });
    return next;
  }

  /**
   * The detector's state is taken at once (its arrays are copied, its header is small beside them);
   * each part's section is written as its steps come, each step's text written out before the next
   * step is taken, so the event loop runs between two steps and the file's text is never held whole.
   * The header's length is written last, in its place: the file is renamed over the old one only then.
   */
  private async writeNow(): Promise<void> {
    const started = performance.now();
    const { header, blobs } = encodeParts(this.detector.exportState());
    const sections: [string, Iterable<string>][] = [];
    for (const [name, part] of this.parts)
      sections.push([name, part.snapshotText ? part.snapshotText() : [json(part.snapshot())]]);
    const tmp = `${this.path}.tmp-${process.pid}`;
    const handle = await open(tmp, 'w');
    let length = 0;
    try {
      await handle.write(Buffer.concat([MAGIC, Buffer.alloc(4)]));
      for (const piece of headerPieces(header, sections)) {
        const bytes = Buffer.from(piece, 'utf8');
        length += bytes.length;
        await handle.write(bytes);
        // The loop runs before the next step is taken (the write alone may complete within the same turn).
        await yieldToLoop();
        if (this.superseded) throw SUPERSEDED;
      }
      if (length > 0xffffffff) throw new Error(`a header of ${length} bytes is too long for a state file`);
      for (const blob of blobs) await handle.write(blob);
      const len = Buffer.alloc(4);
      len.writeUInt32LE(length);
      await handle.write(len, 0, 4, MAGIC.length);
      await handle.sync();
    } catch (e) {
      await handle.close();
      await unlink(tmp).catch(() => undefined);
      // Replaced by the write asked for since: not a failure.
      if (e === SUPERSEDED) return;
      throw e;
    }
    await handle.close();
    try {
      await rename(tmp, this.path);
    } catch (e) {
      await unlink(tmp).catch(() => undefined);
      throw e;
    }
    const bytes = MAGIC.length + 4 + length + blobs.reduce((n, b) => n + b.length, 0);
    this.lastWrite = { bytes, ms: performance.now() - started };
  }
}

/** Thrown inside writeNow to stop a write a newer one replaces (never out of it). */
const SUPERSEDED = new Error('superseded by a newer snapshot');

/** What the file gave back on start: the number of tracked requests restored, or why nothing was. */
export type Restored = { tracked: number } | { error: string } | undefined;

/** A door's --state-file (serve, the gateway's built-in detector): one place for how it is read, logged and written. */
interface DoorState {
  /** What was read back on start; undefined without --state-file or on a first start. */
  readonly restored: Restored;
  /** Writes the detector state now; a failure is one logged line, never a rejection. */
  snapshot(): Promise<void>;
  /** Snapshots every --snapshot-interval from now on (none when it is 0 or there is no file). */
  startSnapshots(): void;
  stopSnapshots(): void;
  /**
   * Keeps another part's state in the same file under `name`: what the file held for it is read back
   * now (one line; a section it cannot read is one line too, and the part starts empty), and every
   * snapshot from now on writes its state. Nothing without a state file.
   */
  keepSection(name: string, part: StatePart): void;
}

/**
 * Reads `config.stateFile` back into the fresh `detector` and says so in one line (or why it was set
 * aside and the door starts empty); then the door snapshots it periodically and on shutdown.
 */
export async function openStateFile(
  config: Pick<ResumewatchConfig, 'stateFile' | 'snapshotIntervalMs'>,
  detector: Detector,
  log: (line: string) => void,
): Promise<DoorState> {
  const file = config.stateFile;
  const state = file ? new StateFile(file, detector) : undefined;
  const restored = state ? await state.restore() : undefined;
  if (restored)
    log('error' in restored ? restored.error : `restored ${restored.tracked} tracked requests from ${file}`);
  const snapshot = (): Promise<void> =>
    state ? state.write().catch((e: Error) => log(`snapshot to ${file} failed: ${e.message}`)) : Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  return {
    restored,
    snapshot,
    startSnapshots() {
      if (!state || config.snapshotIntervalMs <= 0 || timer) return;
      timer = setInterval(() => void snapshot(), config.snapshotIntervalMs);
      timer.unref();
    },
    stopSnapshots() {
      clearInterval(timer);
      timer = undefined;
    },
    keepSection(name, part) {
      if (!state) return;
      state.parts.set(name, part);
      if (!Object.hasOwn(state.sections, name)) return;
      try {
        log(part.restore(state.sections[name]));
      } catch (e) {
        log(`the ${name} section of ${file} not loaded (${(e as Error).message}); it starts empty`);
      }
      // Read once: its memory is the part's now.
      delete state.sections[name];
    },
  };
}
