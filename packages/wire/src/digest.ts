import type { JsonRpcResponse } from './jsonrpc.js';

/** Most characters of a terminal's strings, keys and numbers hashed; past it, each string's length alone. */
const MAX_HASHED_CHARS = 65_536;
/** Most values (of any kind, containers included) walked; past it, what each open container still held is counted instead. */
const MAX_VALUES = 65_536;

const FNV_OFFSET = 0x811c9dc5 | 0;
const FNV_PRIME = 0x01000193;

// What each value is, mixed in before it: above any UTF-16 code unit, so never taken for a character.
const TAG_RESULT = 0x10001;
const TAG_ERROR = 0x10002;
const TAG_STRING = 0x10003;
const TAG_INTEGER = 0x10004;
const TAG_NUMBER = 0x10005;
const TAG_TRUE = 0x10006;
const TAG_FALSE = 0x10007;
const TAG_NULL = 0x10008;
const TAG_ARRAY = 0x10009;
const TAG_OBJECT = 0x1000a;
const TAG_MEMBER = 0x1000b;
const TAG_OTHER = 0x1000c;
const TAG_CUT = 0x1000d;

function step(hash: number, unit: number): number {
  return Math.imul(hash ^ unit, FNV_PRIME);
}

/** Murmur3's finaliser: spreads a member's hash before members are summed (a sum of raw FNV values mixes badly). */
function spread(hash: number): number {
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
  return hash ^ (hash >>> 16);
}

/**
 * A 32-bit digest of a terminal's `result` or `error` member, to tell a duplicate of the first terminal
 * from a different one (a conflict). Computed once per terminal, not per event; only the number is kept,
 * never the payload.
 *
 * - The value is walked, not stringified: an explicit stack, no recursion, so a result nested 100,000
 *   deep (a server passing a stored document through) costs what any other does and never overflows
 *   the stack inside a body's `data` or `end` handler.
 * - Bounded work: at most MAX_VALUES values and MAX_HASHED_CHARS characters hashed (past those, a
 *   string gives its length, and the walk stops with what each open container still held mixed in).
 * - Independent of object key order: each member (key and value) is hashed apart, and an object's
 *   members are summed, so a replay whose server wrote the same result with its keys in another order
 *   is a duplicate, not a conflict. Array order counts.
 */
export function digestOfTerminal(message: JsonRpcResponse): number {
  return 'error' in message ? digestOfValue(message.error, TAG_ERROR) : digestOfValue(message.result, TAG_RESULT);
}

/** The open containers of a walk, one frame each in these parallel arrays (no object per frame). */
interface WalkStack {
  readonly containers: unknown[];
  /** An object's own keys; undefined for an array. */
  readonly keyLists: (string[] | undefined)[];
  /** The next member's index. */
  readonly nexts: number[];
  /** An object's: the hash before it, and the sum of its members' hashes so far. */
  readonly outer: number[];
  readonly sums: number[];
}

/** Frames up to which a walk's stack is kept for the next walk; a deeper one's is dropped with its walk. */
const MAX_KEPT_FRAMES = 64;

/**
 * The stack the next walk takes: five arrays a terminal would otherwise allocate and drop (about 750
 * bytes of garbage a JSON answer). Every frame is cleared as it closes, so it holds no value between
 * walks. A walk that throws (a getter of an object handed in by a caller) drops it, and a walk begun
 * inside another (the same getter digesting) takes a new one: no walk ever shares its frames.
 */
let idleStack: WalkStack | undefined;

function digestOfValue(root: unknown, tag: number): number {
  const stack = idleStack ?? { containers: [], keyLists: [], nexts: [], outer: [], sums: [] };
  idleStack = undefined;
  const hash = walk(stack, root, tag);
  if (stack.containers.length <= MAX_KEPT_FRAMES) idleStack = stack;
  return hash;
}

function walk(stack: WalkStack, root: unknown, tag: number): number {
  let hash = step(FNV_OFFSET, tag);
  let chars = MAX_HASHED_CHARS;
  let values = MAX_VALUES;
  const { containers, keyLists, nexts, outer, sums } = stack;
  let top = -1;
  let cut = false;
  let value = root;
  for (;;) {
    // The value.
    if (--values < 0) {
      cut = true;
      hash = step(hash, TAG_CUT);
    } else if (typeof value === 'string') {
      hash = step(hash, TAG_STRING);
      const n = value.length < chars ? value.length : chars;
      for (let i = 0; i < n; i++) hash = step(hash, value.charCodeAt(i));
      chars -= n;
      hash = step(hash, value.length);
    } else if (typeof value === 'number') {
      if ((value | 0) === value) hash = step(step(step(hash, TAG_INTEGER), value & 0xffff), value >>> 16);
      else {
        const text = String(value);
        hash = step(hash, TAG_NUMBER);
        const n = text.length < chars ? text.length : chars;
        for (let i = 0; i < n; i++) hash = step(hash, text.charCodeAt(i));
        chars -= n;
      }
    } else if (value === true) hash = step(hash, TAG_TRUE);
    else if (value === false) hash = step(hash, TAG_FALSE);
    else if (value === null) hash = step(hash, TAG_NULL);
    else if (typeof value === 'object') {
      top++;
      containers[top] = value;
      nexts[top] = 0;
      if (Array.isArray(value)) {
        hash = step(hash, TAG_ARRAY);
        keyLists[top] = undefined;
      } else {
        keyLists[top] = Object.keys(value);
        outer[top] = hash;
        sums[top] = 0;
      }
    } else hash = step(hash, TAG_OTHER);

    // The next value: the next member of the innermost open container, closing those that are done.
    for (;;) {
      if (top < 0) return hash >>> 0;
      const keys = keyLists[top];
      const next = nexts[top]!;
      if (keys === undefined) {
        const array = containers[top] as unknown[];
        if (!cut && next < array.length) {
          nexts[top] = next + 1;
          value = array[next];
          break;
        }
        // Closed: its length, and (cut short) how many of its items were left.
        hash = step(step(hash, array.length), array.length - next);
      } else {
        // The member just walked (its key and value, hashed apart from the object's others) is summed.
        if (next > 0) sums[top] = (sums[top]! + spread(hash)) | 0;
        if (!cut && next < keys.length) {
          nexts[top] = next + 1;
          const key = keys[next]!;
          hash = step(FNV_OFFSET, TAG_MEMBER);
          const n = key.length < chars ? key.length : chars;
          for (let i = 0; i < n; i++) hash = step(hash, key.charCodeAt(i));
          chars -= n;
          hash = step(hash, key.length);
          value = (containers[top] as Record<string, unknown>)[key];
          break;
        }
        hash = step(step(step(step(outer[top]!, TAG_OBJECT), sums[top]!), keys.length), keys.length - next);
      }
      containers[top] = undefined;
      keyLists[top] = undefined;
      top--;
    }
  }
}
