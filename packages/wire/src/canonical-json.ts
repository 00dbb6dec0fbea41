/**
 * The canonical JSON text of a value (every object's keys sorted), written part by part by an explicit
 * stack: no recursion, so any depth a body can carry (JSON.parse takes 100,000 levels and more) is
 * written, never a stack overflow. It gives what `JSON.stringify` with a key-sorting replacer gives:
 * `toJSON` called with its key, members whose value is undefined, a function or a symbol dropped (null
 * in an array), non-finite numbers as null, a BigInt or a cycle a TypeError. Returns false when the
 * value itself has no JSON text (undefined, a function, a symbol), and then writes nothing.
 */
export function writeCanonicalJson(root: unknown, write: (text: string) => void): boolean {
  // One frame per open container, in parallel arrays: the container, its sorted keys (an object's) or
  // undefined (an array's), the next member's index, and whether a member was written yet (for commas).
  const containers: object[] = [];
  const keyLists: (string[] | undefined)[] = [];
  const nexts: number[] = [];
  const wrote: boolean[] = [];
  /** The containers open now, to refuse a cycle as JSON.stringify does. */
  const open = new Set<object>();
  let top = -1;
  let value = jsonValue(root, '');
  if (!hasText(value)) return false;
  for (;;) {
    // The value (its text, or its container opened).
    if (typeof value === 'string') write(JSON.stringify(value));
    else if (typeof value === 'number') write(Number.isFinite(value) ? String(value) : 'null');
    else if (typeof value === 'boolean') write(value ? 'true' : 'false');
    else if (value === null) write('null');
    else if (typeof value === 'object') {
      if (open.has(value)) throw new TypeError('Converting circular structure to JSON');
      open.add(value);
      top++;
      containers[top] = value;
      nexts[top] = 0;
      wrote[top] = false;
      if (Array.isArray(value)) {
        keyLists[top] = undefined;
        write('[');
      } else {
        keyLists[top] = sortedKeys(value);
        write('{');
      }
    } else write(JSON.stringify(value)); // a BigInt: the TypeError JSON.stringify throws

    // The next value: the next member of the innermost open container, closing those that are done.
    for (;;) {
      if (top < 0) return true;
      const container = containers[top]!;
      const keys = keyLists[top];
      let next = nexts[top]!;
      if (keys === undefined) {
        const array = container as unknown[];
        if (next < array.length) {
          nexts[top] = next + 1;
          if (next > 0) write(',');
          value = jsonValue(array[next], String(next));
          if (!hasText(value)) value = null;
          break;
        }
        write(']');
      } else {
        let found = false;
        while (next < keys.length) {
          const key = keys[next++]!;
          const member = jsonValue((container as Record<string, unknown>)[key], key);
          if (!hasText(member)) continue;
          write(wrote[top] ? `,${JSON.stringify(key)}:` : `${JSON.stringify(key)}:`);
          wrote[top] = true;
          value = member;
          found = true;
          break;
        }
        nexts[top] = next;
        if (found) break;
        write('}');
      }
      open.delete(container);
      containers.length = top;
      top--;
    }
  }
}

/**
 * An object's keys in the order a copy with its keys sorted enumerates them (what the key-sorting
 * replacer's text shows): array-index keys first, in ascending numeric order, as an object lists them
 * whatever their insertion (and as `Object.keys` gives them, first), then the others sorted.
 */
function sortedKeys(value: object): string[] {
  const keys = Object.keys(value);
  let indices = 0;
  while (indices < keys.length && isArrayIndex(keys[indices]!)) indices++;
  if (indices === 0) return keys.sort();
  const rest = keys.splice(indices).sort();
  for (let i = 0; i < rest.length; i++) keys.push(rest[i]!);
  return keys;
}

/** Whether a key is an array index (a canonical integer below 2^32 − 1), which objects list first. */
function isArrayIndex(key: string): boolean {
  const n = key.length;
  if (n === 0 || n > 10 || (n > 1 && key.charCodeAt(0) === 48)) return false;
  for (let i = 0; i < n; i++) {
    const c = key.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return n < 10 || Number(key) < 4_294_967_295;
}

/** A member's value as JSON.stringify takes it: its `toJSON(key)` result when it has one. */
function jsonValue(value: unknown, key: string): unknown {
  if (typeof value === 'object' && value !== null) {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return (toJSON as (key: string) => unknown).call(value, key);
  }
  return value;
}

/** Whether JSON.stringify writes anything for the value (it drops undefined, functions and symbols). */
function hasText(value: unknown): boolean {
  return value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';
}
