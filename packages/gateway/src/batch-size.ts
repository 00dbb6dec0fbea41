/**
 * Whether a request body is a JSON array of more than `cap` elements: a batch the gateway forwards
 * unobserved (--max-batch-messages). Observed, each message of a batch costs a request record, a span
 * and its deadline's timer from the moment it is forwarded, before the upstream answers: a 4 MiB body
 * of tiny requests is about 55,000 of each, from one unauthenticated POST.
 *
 * A scan of the bytes, not a parse: it allocates nothing and stops at the element past the cap, so a
 * body over it costs no more than one at it. It counts the commas at the array's own depth, outside
 * strings; it does not check the JSON (a body the observer cannot parse is nothing to it anyway). A
 * loop over a depth counter, never recursion.
 */
export function batchOver(body: Uint8Array, cap: number): boolean {
  const n = body.length;
  let i = 0;
  // A UTF-8 byte order mark, then JSON's white space.
  if (n >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) i = 3;
  while (i < n && isSpace(body[i]!)) i++;
  if (i >= n || body[i] !== LEFT_BRACKET) return false;
  let depth = 0;
  let commas = 0;
  let inString = false;
  for (i++; i < n; i++) {
    const c = body[i]!;
    if (inString) {
      // A backslash escapes the byte after it (`\"` does not end the string); UTF-8 continuation bytes
      // are never a quote or a backslash.
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (c === QUOTE) inString = true;
    else if (c === LEFT_BRACKET || c === LEFT_BRACE) depth++;
    else if (c === RIGHT_BRACKET || c === RIGHT_BRACE) {
      if (depth === 0) return false;
      depth--;
    } else if (c === COMMA && depth === 0 && ++commas >= cap) return true;
  }
  return false;
}

const LEFT_BRACKET = 0x5b;
const RIGHT_BRACKET = 0x5d;
const LEFT_BRACE = 0x7b;
const RIGHT_BRACE = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}
