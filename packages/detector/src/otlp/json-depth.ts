import { OtlpDecodeError } from './errors.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * Throws before JSON.parse when arrays and objects nest deeper than `max`: one pass over the bytes that
 * stops at the first level too deep, so a body of millions of `[` costs microseconds, not seconds of
 * parsing and gigabytes of nested arrays. Brackets inside strings do not count.
 */
export function checkJsonDepth(buf: Uint8Array, max: number): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max)
        throw new OtlpDecodeError(`malformed OTLP/JSON: nesting deeper than ${max} levels at byte ${i}`);
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
}
