import { OtlpDecodeError } from './errors.js';
import { checkJsonDepth } from './json-depth.js';

/*
 * A validating JSON tokenizer over UTF-8 bytes that builds nothing: the OTLP/JSON decoder walks the
 * fields it reads with it and skips everything else. It accepts exactly what JSON.parse accepts (RFC 8259:
 * no comments, no trailing commas, no control characters in strings, escapes \" \\ \/ \b \f \n \r \t \uXXXX
 * only, numbers -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?, whitespace space, tab, LF and CR), so a body is
 * refused or read as it was when it was parsed whole; invalid UTF-8 inside strings is replaced as
 * Buffer#toString does. Skipping is iterative: nesting costs no stack, and arrays and objects deeper than
 * `maxDepth` are refused at the first bracket too deep, as checkJsonDepth does.
 */

/** Token types, as `typeof` would tell them apart (object and array apart). */
export const NONE = 0;
export const STRING = 1;
export const NUMBER = 2;
export const TRUE = 3;
export const FALSE = 4;
export const NULL = 5;
export const OBJECT = 6;
export const ARRAY = 7;

/** String token flags. */
export const ESCAPED = 1;
export const NON_ASCII = 2;
const UNDERSCORE = 4;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** Byte classes inside a string: 0 plain ASCII, else what the string scanner must look at. */
const C_PLAIN = 0;
const C_QUOTE = 1;
const C_BACKSLASH = 2;
const C_CONTROL = 3;
const C_HIGH = 4;
const C_UNDERSCORE = 5;
const STRING_CLASS = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) STRING_CLASS[c] = C_CONTROL;
for (let c = 0x80; c < 0x100; c++) STRING_CLASS[c] = C_HIGH;
STRING_CLASS[QUOTE] = C_QUOTE;
STRING_CLASS[BACKSLASH] = C_BACKSLASH;
STRING_CLASS[0x5f] = C_UNDERSCORE;

const HEX = new Uint8Array(256);
for (const c of '0123456789abcdefABCDEF') HEX[c.charCodeAt(0)] = 1;
const SIMPLE_ESCAPE = new Uint8Array(256);
for (const c of '"\\/bfnrt') SIMPLE_ESCAPE[c.charCodeAt(0)] = 1;

/** Bytes inside a string that the fast skip stops at: the closing quote, an escape, a control character. */
const S_QUOTE = 1;
const S_BACKSLASH = 2;
const S_CONTROL = 3;
const SKIP_CLASS = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) SKIP_CLASS[c] = S_CONTROL;
SKIP_CLASS[QUOTE] = S_QUOTE;
SKIP_CLASS[BACKSLASH] = S_BACKSLASH;
/** Containers nested below a skipped value deeper than this go to the slow skip (the fast one keeps their kinds in bits). */
const FAST_NEST = 30;

/** A value whose fields are not read (an object or an array where a scalar was expected). */
export const CONTAINER: object = Object.freeze({});

const TRUE_BYTES = Buffer.from('true', 'latin1');
const FALSE_BYTES = Buffer.from('false', 'latin1');
const NULL_BYTES = Buffer.from('null', 'latin1');

/** skipFast: the number at `p` (number()'s grammar); past it, or -1 where number() would throw. */
function skipNumber(b: Uint8Array, p: number, n: number): number {
  if (b[p] === 0x2d) p++;
  let c = p < n ? b[p]! : -1;
  if (c === 0x30) c = ++p < n ? b[p]! : -1;
  else if (c >= 0x31 && c <= 0x39) {
    do c = ++p < n ? b[p]! : -1;
    while (c >= 0x30 && c <= 0x39);
  } else return -1;
  if (c === 0x2e) {
    c = ++p < n ? b[p]! : -1;
    if (c < 0x30 || c > 0x39) return -1;
    do c = ++p < n ? b[p]! : -1;
    while (c >= 0x30 && c <= 0x39);
  }
  if (c === 0x65 || c === 0x45) {
    c = ++p < n ? b[p]! : -1;
    if (c === 0x2b || c === 0x2d) c = ++p < n ? b[p]! : -1;
    if (c < 0x30 || c > 0x39) return -1;
    do c = ++p < n ? b[p]! : -1;
    while (c >= 0x30 && c <= 0x39);
  }
  return p;
}

export class JsonCursor {
  pos = 0;
  /** The last string token: content bytes [strStart, strEnd) and its flags. */
  strStart = 0;
  strEnd = 0;
  strFlags = 0;
  /** The last number token: bytes [numStart, pos). */
  numStart = 0;
  private readonly stack: number[] = [];

  constructor(
    readonly buf: Uint8Array,
    readonly maxDepth: number,
  ) {}

  /**
   * A syntax error. A body nested too deep is refused for that first, wherever the syntax error is
   * (the depth check used to run over the whole body before parsing).
   */
  fail(what: string, at = this.pos): never {
    if (this.maxDepth !== Infinity) checkJsonDepth(this.buf, this.maxDepth);
    const b = this.buf[at];
    const found =
      b === undefined
        ? 'end of input'
        : b >= 0x21 && b < 0x7f
          ? `'${String.fromCharCode(b)}'`
          : `byte 0x${b.toString(16).padStart(2, '0')}`;
    throw new OtlpDecodeError(`malformed JSON: ${what}, found ${found} at byte ${at}`);
  }

  depthError(at: number): never {
    throw new OtlpDecodeError(`malformed OTLP/JSON: nesting deeper than ${this.maxDepth} levels at byte ${at}`);
  }

  ws(): number {
    const b = this.buf;
    const n = b.length;
    let p = this.pos;
    // Never a read past the end: the undefined it gives would make V8 compile these comparisons (and
    // every caller's that it is inlined into) as generic ones, a call to a builtin each.
    while (p < n) {
      const c = b[p]!;
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) {
        this.pos = p;
        return c;
      }
      p++;
    }
    this.pos = p;
    return -1;
  }

  /** After whitespace: the byte `c` (consumed), else a syntax error naming `what`. */
  expect(c: number, what: string): void {
    if (this.ws() !== c) this.fail(what);
    this.pos++;
  }

  /** Opens an object or array at `pos` (its bracket checked by the caller) that is `depth` levels deep. */
  open(depth: number): void {
    if (depth > this.maxDepth) this.depthError(this.pos);
    this.pos++;
  }

  /**
   * At the first member of an object just opened, or after a member: true and positioned after the
   * member's key and colon (the key is the last string token), false and past `}` at the end.
   */
  nextKey(first: boolean): boolean {
    let c = this.ws();
    if (!first) {
      if (c === CLOSE_OBJECT) {
        this.pos++;
        return false;
      }
      if (c !== COMMA) this.fail("expected ',' or '}' after an object member");
      this.pos++;
      c = this.ws();
    } else if (c === CLOSE_OBJECT) {
      this.pos++;
      return false;
    }
    if (c !== QUOTE) this.fail('expected a string key');
    this.string();
    this.expect(COLON, "expected ':' after an object key");
    return true;
  }

  /** Like nextKey for array elements: true and at the element (after whitespace), false and past `]`. */
  nextElement(first: boolean): boolean {
    const c = this.ws();
    if (c === CLOSE_ARRAY) {
      this.pos++;
      return false;
    }
    if (!first) {
      if (c !== COMMA) this.fail("expected ',' or ']' after an array element");
      this.pos++;
      this.ws();
    }
    return true;
  }

  /** The type of the value at `pos` (after whitespace), without consuming it. */
  peek(): number {
    const c = this.ws();
    switch (c) {
      case QUOTE:
        return STRING;
      case OPEN_OBJECT:
        return OBJECT;
      case OPEN_ARRAY:
        return ARRAY;
      case 0x74:
        return TRUE;
      case 0x66:
        return FALSE;
      case 0x6e:
        return NULL;
      default:
        if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return NUMBER;
        return this.fail('expected a value');
    }
  }

  /** Consumes a string token at `pos` (its opening quote). */
  string(): void {
    const b = this.buf;
    const start = this.pos + 1;
    let p = start;
    const n = b.length;
    let flags = 0;
    for (;;) {
      // Plain ASCII runs in a tight loop, four bytes a step while they last (past the end,
      // STRING_CLASS[undefined] is no class and stops the loop byte by byte).
      while (
        p + 4 <= n &&
        (STRING_CLASS[b[p]!]! | STRING_CLASS[b[p + 1]!]! | STRING_CLASS[b[p + 2]!]! | STRING_CLASS[b[p + 3]!]!) === 0
      )
        p += 4;
      while (STRING_CLASS[b[p]!] === C_PLAIN) p++;
      const c = b[p];
      if (c === undefined) this.fail('unterminated string', p);
      const cls = STRING_CLASS[c]!;
      if (cls === C_QUOTE) break;
      if (cls === C_HIGH) flags |= NON_ASCII;
      else if (cls === C_UNDERSCORE) flags |= UNDERSCORE;
      else if (cls === C_CONTROL) this.fail('control character in a string', p);
      else {
        flags |= ESCAPED;
        const e = b[p + 1];
        if (e === 0x75) {
          if (!(HEX[b[p + 2]!] && HEX[b[p + 3]!] && HEX[b[p + 4]!] && HEX[b[p + 5]!]))
            this.fail('bad \\u escape in a string', p);
          p += 6;
          continue;
        }
        if (e === undefined || !SIMPLE_ESCAPE[e]) this.fail('bad escape in a string', p);
        p += 2;
        continue;
      }
      p++;
    }
    this.strStart = start;
    this.strEnd = p;
    this.strFlags = flags;
    this.pos = p + 1;
  }

  /** The last string token's value. */
  stringValue(): string {
    const flags = this.strFlags;
    if (flags === 0 || flags === UNDERSCORE)
      return Buffer.prototype.latin1Slice.call(this.buf, this.strStart, this.strEnd);
    if ((flags & ESCAPED) === 0) return Buffer.prototype.utf8Slice.call(this.buf, this.strStart, this.strEnd);
    return JSON.parse(Buffer.prototype.utf8Slice.call(this.buf, this.strStart - 1, this.strEnd + 1)) as string;
  }

  /** Consumes a number token at `pos`. */
  number(): void {
    const b = this.buf;
    let p = this.pos;
    this.numStart = p;
    if (b[p] === 0x2d) p++;
    let c = b[p];
    if (c === 0x30) c = b[++p];
    else if (c !== undefined && c >= 0x31 && c <= 0x39) {
      do c = b[++p];
      while (c !== undefined && c >= 0x30 && c <= 0x39);
    } else this.fail('expected a digit', p);
    if (c === 0x2e) {
      c = b[++p];
      if (c === undefined || c < 0x30 || c > 0x39) this.fail('expected a digit after the decimal point', p);
      do c = b[++p];
      while (c !== undefined && c >= 0x30 && c <= 0x39);
    }
    if (c === 0x65 || c === 0x45) {
      c = b[++p];
      if (c === 0x2b || c === 0x2d) c = b[++p];
      if (c === undefined || c < 0x30 || c > 0x39) this.fail('expected a digit in the exponent', p);
      do c = b[++p];
      while (c !== undefined && c >= 0x30 && c <= 0x39);
    }
    this.pos = p;
  }

  /** The last number token's value (the same double JSON.parse gives). */
  numberValue(): number {
    return Number(Buffer.prototype.latin1Slice.call(this.buf, this.numStart, this.pos));
  }

  private literal(word: string): void {
    const b = this.buf;
    const p = this.pos;
    for (let i = 0; i < word.length; i++) if (b[p + i] !== word.charCodeAt(i)) this.fail(`expected ${word}`, p + i);
    this.pos = p + word.length;
  }

  /**
   * Consumes the scalar at `pos` whose type peek() gave, keeping its token (string or number) for
   * stringValue()/numberValue(). Objects and arrays go to skip().
   */
  scalar(type: number): void {
    switch (type) {
      case STRING:
        return this.string();
      case NUMBER:
        return this.number();
      case TRUE:
        return this.literal('true');
      case FALSE:
        return this.literal('false');
      default:
        return this.literal('null');
    }
  }

  /** Consumes any value at `pos`; an object or array there is `depth` levels deep. Returns its type. */
  skip(depth: number): number {
    const type = this.peek();
    if (type !== OBJECT && type !== ARRAY) {
      this.scalar(type);
      return type;
    }
    if (this.skipFast(depth, false)) return type;
    const stack = this.stack;
    const base = stack.length;
    // One loop over nested containers: at a value, or just after one (`after`), with the open
    // containers on `stack` (1 object, 0 array).
    let after = false;
    for (;;) {
      if (!after) {
        const c = this.ws();
        if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
          this.open(depth + stack.length - base);
          const isObject = c === OPEN_OBJECT ? 1 : 0;
          const d = this.ws();
          if (d === (isObject ? CLOSE_OBJECT : CLOSE_ARRAY)) {
            this.pos++;
            after = true;
          } else {
            stack.push(isObject);
            if (isObject) {
              if (d !== QUOTE) this.fail('expected a string key');
              this.string();
              this.expect(COLON, "expected ':' after an object key");
            }
          }
        } else {
          this.scalar(this.peek());
          after = true;
        }
        if (!after) continue;
      }
      if (stack.length === base) return type;
      const isObject = stack[stack.length - 1]!;
      const c = this.ws();
      if (c === COMMA) {
        this.pos++;
        after = false;
        if (isObject) {
          if (this.ws() !== QUOTE) this.fail('expected a string key');
          this.string();
          this.expect(COLON, "expected ':' after an object key");
        }
      } else if (c === (isObject ? CLOSE_OBJECT : CLOSE_ARRAY)) {
        this.pos++;
        stack.pop();
      } else
        this.fail(
          isObject ? "expected ',' or '}' after an object member" : "expected ',' or ']' after an array element",
        );
    }
  }

  /**
   * skip()'s fast path for the object or array at `pos` (after whitespace), `depth` levels deep: one loop
   * over its bytes with local state, no token kept, its containers' kinds in the bits of one integer.
   * True and past its end when it is valid JSON (what skip() accepts, byte for byte) nested no deeper than
   * maxDepth and FAST_NEST levels; false with `pos` unchanged otherwise, and skip() then reads it again
   * token by token, throwing what it throws where it throws it. With `watch`, false too at the first
   * string that starts with the bytes `mcp.` or has a \u escape: a value without either is no string
   * that spells an MCP name (those are ASCII letters and dots, which no simple escape makes).
   */
  skipFast(depth: number, watch: boolean): boolean {
    const b = this.buf;
    const n = b.length;
    const room = Math.min(FAST_NEST, this.maxDepth - depth + 1);
    let p = this.pos;
    let kinds = 0;
    let level = 0;
    let after = false;
    for (;;) {
      if (!after) {
        let c = p < n ? b[p]! : -1;
        while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = ++p < n ? b[p]! : -1;
        if (c === QUOTE) {
          p = this.skipString(p + 1, watch);
          if (p < 0) return false;
          after = true;
        } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
          if (level >= room) return false;
          let d = ++p < n ? b[p]! : -1;
          while (d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09) d = ++p < n ? b[p]! : -1;
          if (c === OPEN_OBJECT) {
            if (d === CLOSE_OBJECT) {
              p++;
              after = true;
            } else {
              if (d !== QUOTE) return false;
              kinds |= 1 << level;
              level++;
              p = this.skipKey(p, watch);
              if (p < 0) return false;
            }
          } else if (d === CLOSE_ARRAY) {
            p++;
            after = true;
          } else {
            kinds &= ~(1 << level);
            level++;
          }
        } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
          p = skipNumber(b, p, n);
          if (p < 0) return false;
          after = true;
        } else {
          const word = c === 0x74 ? TRUE_BYTES : c === 0x66 ? FALSE_BYTES : c === 0x6e ? NULL_BYTES : undefined;
          if (word === undefined || p + word.length > n) return false;
          for (let i = 1; i < word.length; i++) if (b[p + i] !== word[i]) return false;
          p += word.length;
          after = true;
        }
        if (!after) continue;
      }
      if (level === 0) {
        this.pos = p;
        return true;
      }
      let c = p < n ? b[p]! : -1;
      while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = ++p < n ? b[p]! : -1;
      const isObject = (kinds >>> (level - 1)) & 1;
      if (c === COMMA) {
        p++;
        after = false;
        if (isObject) {
          let d = p < n ? b[p]! : -1;
          while (d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09) d = ++p < n ? b[p]! : -1;
          if (d !== QUOTE) return false;
          p = this.skipKey(p, watch);
          if (p < 0) return false;
        }
      } else if (c === (isObject ? CLOSE_OBJECT : CLOSE_ARRAY)) {
        p++;
        level--;
      } else return false;
    }
  }

  /** skipFast: the key whose opening quote is at `p`, and the colon after it; past the colon, or -1. */
  private skipKey(p: number, watch: boolean): number {
    const b = this.buf;
    const n = b.length;
    p = this.skipString(p + 1, watch);
    if (p < 0) return -1;
    let c = p < n ? b[p]! : -1;
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = ++p < n ? b[p]! : -1;
    return c === COLON ? p + 1 : -1;
  }

  /**
   * skipFast: the string whose content starts at `p`; past its closing quote, or -1 where string() would
   * throw (and, with `watch`, at a string that starts with `mcp.` or has a \u escape).
   */
  private skipString(p: number, watch: boolean): number {
    const b = this.buf;
    const n = b.length;
    if (watch && p + 3 < n && b[p] === 0x6d && b[p + 1] === 0x63 && b[p + 2] === 0x70 && b[p + 3] === 0x2e) return -1;
    for (;;) {
      // Four bytes a step while none is special, then byte by byte to the one that is.
      while (
        p + 4 <= n &&
        (SKIP_CLASS[b[p]!]! | SKIP_CLASS[b[p + 1]!]! | SKIP_CLASS[b[p + 2]!]! | SKIP_CLASS[b[p + 3]!]!) === 0
      )
        p += 4;
      while (p < n && SKIP_CLASS[b[p]!] === 0) p++;
      if (p >= n) return -1;
      const cls = SKIP_CLASS[b[p]!];
      if (cls === S_QUOTE) return p + 1;
      if (cls === S_CONTROL || p + 1 >= n) return -1;
      const e = b[p + 1]!;
      if (e === 0x75) {
        if (p + 5 >= n || !(HEX[b[p + 2]!] && HEX[b[p + 3]!] && HEX[b[p + 4]!] && HEX[b[p + 5]!])) return -1;
        if (watch) return -1;
        p += 6;
      } else if (SIMPLE_ESCAPE[e]) p += 2;
      else return -1;
    }
  }

  /** After the top-level value: nothing but whitespace may follow. */
  end(): void {
    if (this.ws() !== -1) this.fail('unexpected data after the JSON value');
  }
}
