/**
 * Under --enforce the guard filters SSE bodies: it must read the very bytes it forwards, and an encoded
 * body's events cannot be removed without encoding it again. So the gateway asks the upstream for its
 * bodies unencoded (`Accept-Encoding: identity`, RFC 9110 §12.5.3) in place of what the client
 * accepts: the client still gets bodies it can read (identity is acceptable unless it says
 * `identity;q=0`, which no MCP client does), and the cost is the bytes between the gateway and the
 * upstream, sent whole. An upstream that encodes all the same gets its SSE bodies passed unfiltered and
 * unobserved (counted: `resumewatch_gateway_unparsed_total{kind="encoded_body"}`); JSON bodies are read
 * from a decoded copy either way. Observing only, the client's `Accept-Encoding` goes as it is.
 */
export function askIdentity(headers: [string, string][]): void {
  for (let i = headers.length - 1; i >= 0; i--)
    if (headers[i]![0].toLowerCase() === 'accept-encoding') headers.splice(i, 1);
  headers.push(['accept-encoding', 'identity']);
}
