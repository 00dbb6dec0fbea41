import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

/*
 * What the upstream is told of the client's request, since its `Host` becomes the upstream's: the name
 * the client used (`X-Forwarded-Host`, `Forwarded: host=`), the scheme it spoke to the gateway (always
 * http: the gateway serves no TLS) and the peer's address. A client's own fields of these names are
 * never trusted: any client can write them, and the gateway does not know which peers are proxies.
 * They are dropped (hop-by-hop.ts) and replaced, never appended to; behind a load balancer, `for` is
 * the load balancer's address.
 */

/** The request fields the gateway sets itself: a client's own are dropped. */
export const FORWARDING_FIELDS = ['forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto'] as const;

/** The scheme clients speak to the gateway. */
const PROTO = 'http';

/** An RFC 7239 value: as it is when it is a token, else a quoted-string. */
function value(text: string): string {
  return /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(text) ? text : `"${text.replace(/["\\]/g, '\\$&')}"`;
}

/** The forwarding fields for the upstream request of `req` (RFC 7239 and the X-Forwarded-* convention). */
export function forwardingHeaders(req: IncomingMessage): [string, string][] {
  const host = req.headers.host;
  const peer = req.socket.remoteAddress;
  // RFC 7239: an IPv6 node in brackets (then quoted); `unknown` when the peer is not known.
  const node = peer === undefined ? 'unknown' : isIP(peer) === 6 ? `[${peer}]` : peer;
  const forwarded = [...(host !== undefined ? [`host=${value(host)}`] : []), `proto=${PROTO}`, `for=${value(node)}`];
  return [
    ['forwarded', forwarded.join(';')],
    ...(host !== undefined ? [['x-forwarded-host', host] as [string, string]] : []),
    ['x-forwarded-proto', PROTO],
    ...(peer !== undefined ? [['x-forwarded-for', peer] as [string, string]] : []),
  ];
}
