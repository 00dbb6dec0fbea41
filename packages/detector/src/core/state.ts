import type { DetectorOptions } from './options.js';

/** Bumped whenever what exportState() holds changes meaning; a file of another format is not loaded. */
export const STATE_FORMAT = 3;

/** The fields of one of the core's structures (typed-array columns, arrays, numbers), by name. */
export type StateFields = Record<string, unknown>;

/** Everything a Detector knows, as plain data: typed arrays and arrays are shared, not copied. */
export interface DetectorState {
  format: number;
  options: DetectorOptions;
  now: number;
  /** evictions, released, accepted, duplicate, invalid, ignored */
  counts: number[];
  services: string[];
  openStorms: number[];
  table: StateFields;
  spanIds: StateFields;
  attemptStreams: StateFields;
  /** Streams of polls and continuations: their reattach span is no attempt, before a restart or after it. */
  quietStreams: StateFields;
}

/** A state that does not fit the detector it is loaded into (other format, other options, other columns). */
export class StateMismatchError extends Error {
  override readonly name = 'StateMismatchError';
}

/**
 * Every own data field of a structure, whatever columns it has today: a column added later is saved
 * and loaded without touching this code, and a file that lacks one is refused rather than half-loaded.
 */
export function fieldsOf(o: object): StateFields {
  const out: StateFields = {};
  for (const [k, v] of Object.entries(o)) if (typeof v !== 'function') out[k] = v;
  return out;
}

export function loadFields(target: object, fields: StateFields, what: string): void {
  const t = target as Record<string, unknown>;
  for (const [k, v] of Object.entries(t)) {
    if (typeof v === 'function') continue;
    if (!(k in fields)) throw new StateMismatchError(`state of ${what} has no field ${k}`);
    const f = fields[k];
    const sameKind = ArrayBuffer.isView(v)
      ? ArrayBuffer.isView(f) && (f as object).constructor === (v as object).constructor
      : Array.isArray(v)
        ? Array.isArray(f)
        : typeof f === typeof v;
    if (!sameKind)
      throw new StateMismatchError(`state of ${what}: field ${k} is not a ${Array.isArray(v) ? 'list' : typeof v}`);
  }
  for (const k of Object.keys(fields)) {
    if (!(k in t)) throw new StateMismatchError(`state of ${what} has an unknown field ${k}`);
    t[k] = fields[k];
  }
}
