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

/** A value whose fields are not read (an object or an array where a scalar was expected). */
export const CONTAINER: object = Object.freeze({});

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
    let flags = 0;
    for (;;) {
      // Plain ASCII runs in a tight loop (past the end, STRING_CLASS[undefined] is no class and stops it).
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

  /** After the top-level value: nothing but whitespace may follow. */
  end(): void {
    if (this.ws() !== -1) this.fail('unexpected data after the JSON value');
  }
}
