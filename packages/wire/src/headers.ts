/** Header names of the Streamable HTTP transport, lower-case (as Node and `Headers` give them). */
export const HEADER_SESSION_ID = 'mcp-session-id';
export const HEADER_LAST_EVENT_ID = 'last-event-id';
export const HEADER_PROTOCOL_VERSION = 'mcp-protocol-version';

type HeaderSource = RequestInit['headers'] | Headers;

/**
 * A header of a request's headers in any `HeadersInit` form, by its lower-case name, as `new
 * Headers(init).get(name)` gives it (values of a repeated name joined by ", ", outer whitespace
 * trimmed) without copying every header into a new `Headers` per request.
 */
export function headerValue(headers: HeaderSource, name: string): string | undefined {
  if (headers === undefined || headers === null) return undefined;
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  let value: string | undefined;
  if (Array.isArray(headers)) {
    for (const pair of headers)
      if (isName(pair[0], name)) value = value === undefined ? trimmed(pair[1]!) : `${value}, ${trimmed(pair[1]!)}`;
    return value;
  }
  // Headers' other forms (a record, or an iterable of pairs that is not an array) are rare: copied.
  if (typeof (headers as unknown as Iterable<unknown>)[Symbol.iterator] === 'function')
    return new Headers(headers).get(name) ?? undefined;
  const record = headers as Record<string, string | readonly string[]>;
  for (const key in record) {
    if (!isName(key, name)) continue;
    const v = record[key]!;
    // A list value is one header per item, as Headers appends them.
    const text = typeof v === 'string' ? trimmed(v) : Array.isArray(v) ? v.map(trimmed).join(', ') : trimmed(String(v));
    value = value === undefined ? text : `${value}, ${text}`;
  }
  return value;
}

function isName(key: string | undefined, lowerName: string): boolean {
  return key !== undefined && key.length === lowerName.length && (key === lowerName || key.toLowerCase() === lowerName);
}

/** HTTP whitespace (space, tab, CR, LF) trimmed from both ends, as `Headers` normalises a value. */
function trimmed(value: string): string {
  const v = String(value);
  const first = v.charCodeAt(0);
  const last = v.charCodeAt(v.length - 1);
  const ws = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
  return v.length > 0 && (ws(first) || ws(last)) ? v.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, '') : v;
}
