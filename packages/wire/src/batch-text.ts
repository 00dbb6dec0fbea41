import { isJsonRpcMessage } from './jsonrpc.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const LINE_BREAK = /[\r\n]/g;

/**
 * The text of a batch (`data`, a JSON array of JSON-RPC messages) with only the messages not in
 * `removed` (indices among the batch's messages, as `parseMessages` lists them), each as the server
 * wrote it: the array's elements are found by one scan of the text (strings and nesting counted, no
 * recursion), never serialised again, so a kept message of any depth costs its length. On one line:
 * line breaks between tokens become spaces (JSON text has none inside a string). Undefined when `data`
 * is not such an array.
 */
export function batchTextWithout(data: string, removed: readonly number[]): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed)) return undefined;
  const spans = elementSpans(data);
  if (spans === undefined || spans.length !== parsed.length * 2) return undefined;
  let text = '[';
  let message = 0;
  let kept = 0;
  for (let i = 0; i < parsed.length; i++) {
    if (!isJsonRpcMessage(parsed[i])) continue;
    if (!removed.includes(message++)) {
      if (kept++ > 0) text += ',';
      text += data.slice(spans[2 * i]!, spans[2 * i + 1]!).replace(LINE_BREAK, ' ');
    }
  }
  return `${text}]`;
}

/** Start and end offsets of each element of the JSON array `data` (valid JSON), in pairs; undefined if not an array. */
function elementSpans(data: string): number[] | undefined {
  let i = 0;
  while (i < data.length && data.charCodeAt(i) !== OPEN_ARRAY) i++;
  if (i === data.length) return undefined;
  const spans: number[] = [];
  let depth = 0;
  let start = i + 1;
  let inString = false;
  for (i = i + 1; i < data.length; i++) {
    const c = data.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_ARRAY || c === OPEN_OBJECT) depth++;
    else if (depth > 0 && (c === CLOSE_ARRAY || c === CLOSE_OBJECT)) depth--;
    else if (depth === 0 && (c === COMMA || c === CLOSE_ARRAY)) {
      const text = data.slice(start, i).trim();
      if (text.length > 0) {
        const offset = data.indexOf(text, start);
        spans.push(offset, offset + text.length);
      }
      start = i + 1;
      if (c === CLOSE_ARRAY) return spans;
    }
  }
  return undefined;
}
