import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

/*
 * What the upstream is told of the client's request, since its `Host` becomes the upstream's: the name
 * the client used (`X-Forwarded-Host`, `Forwarded: host=`), the scheme it spoke to the gateway (always
 * http: the gateway serves no TLS) and the client's address. A client's own fields of these names are
 * never passed on: any client can write them. They are dropped (hop-by-hop.ts) and replaced, never
 * appended to. The address is the peer's, or behind a proxy listed in --trusted-proxies the client's as
 * that proxy told it (client-identity.ts); behind any other load balancer, `for` is the load balancer's.
 */

/** The request fields the gateway sets itself: a client's own are dropped. */
export const FORWARDING_FIELDS = ['forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto'] as const;

/** The scheme clients speak to the gateway. */
const PROTO = 'http';

/** An RFC 7239 value: as it is when it is a token, else a quoted-string. */
function value(text: string): string {
  return /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(text) ? text : `"${text.replace(/["\\]/g, '\\$&')}"`;
}

/**
 * Appends to `headers` the forwarding fields for the upstream request of `req` (RFC 7239 and the
 * X-Forwarded-* convention); `peer`: the client's address (ClientIdentities), undefined when not known.
 */
export function pushForwardingHeaders(
  headers: [string, string][],
  req: IncomingMessage,
  peer: string | undefined,
): void {
  const host = req.headers.host;
  headers.push(['forwarded', forwardedValue(host, peer)]);
  if (host !== undefined) headers.push(['x-forwarded-host', host]);
  headers.push(['x-forwarded-proto', PROTO]);
  if (peer !== undefined) headers.push(['x-forwarded-for', peer]);
}

/** The last `Forwarded` value made, by the Host and address it was made of: a client's requests repeat both. */
let last: { host: string | undefined; peer: string | undefined; value: string } = {
  host: undefined,
  peer: undefined,
  value: 'proto=http;for=unknown',
};

/**
 * The `Forwarded` value for a request to `host` from `peer`: the last one again when both are the same
 * (two comparisons, where making it takes two regular expressions, an address parse and four strings).
 */
function forwardedValue(host: string | undefined, peer: string | undefined): string {
  if (host === last.host && peer === last.peer) return last.value;
  // RFC 7239: an IPv6 node in brackets (then quoted); `unknown` when the peer is not known.
  const node = peer === undefined ? 'unknown' : isIP(peer) === 6 ? `[${peer}]` : peer;
  const made = `${host !== undefined ? `host=${value(host)};` : ''}proto=${PROTO};for=${value(node)}`;
  last = { host, peer, value: made };
  return made;
}
