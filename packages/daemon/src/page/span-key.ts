import { getRandomValues } from 'node:crypto';

/**
 * A key of the page's evidence as its parts, not as a string: what SpanColumns' own table is keyed by.
 * Every span serve accepts passes through the evidence's window, and a key string built per span (a
 * request's prefix and its id concatenated, then flattened and hashed by a Map) was most of what the
 * window allocated. A key here is a reused object holding references to strings the span or the finding
 * already has, and a hash computed over their characters in JavaScript (a session's part once while its
 * requests follow). Two keys are equal when their parts are (compared part by part in the table, so a
 * collision of hashes is only a longer probe); their text (keyText) is the string key timeline-event.ts
 * spells for the same parts (requestKey, traceKey, taskKey, sessionKey), so equal parts and equal text go
 * together.
 */
export class SpanKey {
  /** What the key is of: one of the KEY_ values. */
  tag = KEY_TEXT;
  /** The service (KEY_REQUEST, KEY_TASK, KEY_SESSION), the trace id (KEY_TRACE), the text (KEY_TEXT). */
  a = '';
  /** The session (KEY_REQUEST, KEY_SESSION), the task id (KEY_TASK); '' for the others. */
  b = '';
  /** The request id (KEY_REQUEST) as requestId gives it; '' for the others. */
  c: string | number = '';
  /** keyHash of the parts. */
  hash = 0;
}

/** A key given as its text (SpanColumns' string methods): the text is its only part. */
export const KEY_TEXT = 0;
/** A request of a session by (service, session, request id), as requestKey spells it. */
export const KEY_REQUEST = 1;
/** A call's attempt without a session by its trace id (traceKey). */
export const KEY_TRACE = 2;
/** A task by (service, task id) (taskKey). */
export const KEY_TASK = 3;
/** A session's refused attempts by (service, session) (sessionKey; a client's as clientKey). */
export const KEY_SESSION = 4;

/**
 * A request id as a key part: one id whether it came as a number or as its decimal text (the string key
 * spelled both `String(id)`). A small non-negative integer (a number, or its canonical decimal text) is the
 * number, compared and hashed without a string; any other number its text (String, allocated: rare).
 */
export function requestId(id: string | number): string | number {
  if (typeof id === 'number') return id >= 0 && id < SMALL_ID && Number.isInteger(id) ? id : String(id);
  const n = id.length;
  if (n === 0 || n > 9) return id;
  let v = 0;
  for (let i = 0; i < n; i++) {
    const d = id.charCodeAt(i) - 48;
    if (d < 0 || d > 9 || (d === 0 && i === 0 && n > 1)) return id;
    v = v * 10 + d;
  }
  return v;
}
/** Request ids below this are kept as numbers (nine decimal digits at most, a small integer in V8). */
const SMALL_ID = 1e9;

/**
 * FNV-1a's prime over UTF-16 code units, each part's length mixed in after it, from a seed drawn at start
 * (FNV's offset basis xored with random bits): ids come from the wire, and a fixed hash would let a sender
 * choose ids that all fall in one run of the table, as V8 seeds its own string hashes against.
 */
const SEED = (0x811c9dc5 ^ getRandomValues(new Int32Array(1))[0]!) | 0;
const PRIME = 16777619;

/** The hash of `s` continued from `h`; O(length), run once per new part (a session's while its requests follow). */
function hashText(h: number, s: string): number {
  const n = s.length;
  for (let i = 0; i < n; i++) h = Math.imul(h ^ s.charCodeAt(i), PRIME);
  return Math.imul(h ^ n ^ 0x5bd1e995, PRIME);
}

/** The hash of a key's tag and first two parts (a request's: its session's, reused while its requests follow). */
export function hashHead(tag: number, a: string, b: string): number {
  return hashText(hashText(Math.imul(SEED ^ tag, PRIME), a), b);
}

/** The hash of a whole key from hashHead of its tag and first two parts, and its third part. */
export function hashTail(head: number, c: string | number): number {
  if (typeof c === 'number') {
    // A small integer: its bits mixed (murmur3's finaliser), apart from any text by the constant.
    let h = Math.imul(head ^ c ^ 0x27d4eb2f, PRIME);
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    return h | 0;
  }
  return c === '' ? head : hashText(head, c);
}

/** Fills `key` with the parts and their hash; returns it. */
export function setKey(key: SpanKey, tag: number, a: string, b: string, c: string | number): SpanKey {
  key.tag = tag;
  key.a = a;
  key.b = b;
  key.c = c;
  key.hash = hashTail(hashHead(tag, a, b), c);
  return key;
}

/** A new key of the parts (for the page's reads, which are few). */
export function keyOf(tag: number, a: string, b = '', c: string | number = ''): SpanKey {
  return setKey(new SpanKey(), tag, a, b, c);
}
