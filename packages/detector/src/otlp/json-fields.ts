import { ATTR_SERVICE_NAME } from '@resumewatch/semconv';
import { ByteKeys } from './detector-keys.js';
import type { JsonCursor } from './json-cursor.js';

/*
 * The field names of the OTLP messages the JSON walk reads (json-walk.ts), found from a key's bytes, and
 * which occurrence of a field counts when an object spells it twice. The decoder reads bytes instead of
 * calling JSON.parse (json.ts says why), so the rules JSON.parse and camelCaseOtlpFieldNames would apply
 * to keys live here: a duplicate key counts by its last occurrence; a field is read under its
 * lowerCamelCase JSON name or its proto (snake_case) name, the lowerCamelCase spelling winning, else the
 * first snake_case spelling.
 */

/** A field table of one OTLP message: its lowerCamelCase JSON names, found from a key's bytes. */
class Fields {
  private readonly names: ByteKeys;
  /** The spelling of the key last looked up, when it was a snake_case (proto) name; else undefined. */
  snake: string | undefined;

  constructor(names: string[]) {
    this.names = new ByteKeys(names);
  }

  /** The field the cursor's last string token names, or -1. */
  of(cur: JsonCursor): number {
    this.snake = undefined;
    if (cur.strFlags === 0) return this.names.indexOf(cur.buf, cur.strStart, cur.strEnd);
    const key = cur.stringValue();
    if (!key.includes('_')) return this.names.indexOfString(key);
    // camelCaseOtlpFieldNames' renaming, so that every spelling it accepts is accepted here.
    const id = this.names.indexOfString(key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()));
    if (id >= 0) this.snake = key;
    return id;
  }
}

/**
 * Which occurrence of a field counts in one object: a lowerCamelCase key always (the last one wins), a
 * snake_case one only while no lowerCamelCase key was seen and only the first snake_case spelling.
 */
export class Admission {
  private camel = 0;
  private snakes: (string | undefined)[] | undefined;

  reset(): void {
    this.camel = 0;
    this.snakes = undefined;
  }

  admit(id: number, snake: string | undefined): boolean {
    const bit = 1 << id;
    if (snake === undefined) {
      this.camel |= bit;
      return true;
    }
    if ((this.camel & bit) !== 0) return false;
    const s = (this.snakes ??= []);
    if (s[id] === undefined) {
      s[id] = snake;
      return true;
    }
    return s[id] === snake;
  }
}

export const TOP = new Fields(['resourceSpans']);
export const RESOURCE_SPANS = new Fields(['resource', 'scopeSpans']);
export const RESOURCE = new Fields(['attributes']);
export const SCOPE_SPANS = new Fields(['spans']);
/** The Span fields, by their index in SPAN (the walk keeps the scalar ones' tokens at index * 4). */
export const F_TRACE = 0;
export const F_SPAN = 1;
export const F_PARENT = 2;
export const F_NAME = 3;
export const F_KIND = 4;
export const F_START = 5;
export const F_END = 6;
export const F_ATTRIBUTES = 7;
export const SPAN = new Fields([
  'traceId',
  'spanId',
  'parentSpanId',
  'name',
  'kind',
  'startTimeUnixNano',
  'endTimeUnixNano',
  'attributes',
]);
export const KEY_VALUE = new Fields(['key', 'value']);
export const ANY_VALUE = new Fields(['stringValue', 'boolValue', 'intValue', 'doubleValue']);
/** The resource attribute that names the service. */
export const SERVICE_KEY = new ByteKeys([ATTR_SERVICE_NAME]);
