import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';

/** Who sent a request, as far as the gateway can tell. */
export interface ClientIdentity {
  /** The client's address: the peer's, or behind a trusted proxy the one the proxy says it served. */
  address: string | undefined;
  /**
   * What keeps one client's requests apart from another's where no session does (a 2026-07-28 re-issue is
   * matched among its own client's requests only): the address and a digest of the `Authorization`
   * header (never the header itself). Clients behind one address with the same credentials share it.
   */
  scope: string;
}

/** Entries of X-Forwarded-For read from the right, at most: a longer chain is not walked further. */
const MAX_HOPS = 8;

/** `::ffff:10.0.0.1` (an IPv4 peer of a dual-stack socket) as `10.0.0.1`, so that one client has one address. */
function plain(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/**
 * The proxies whose `X-Forwarded-For` the gateway believes (--trusted-proxies): addresses and
 * `address/prefix` ranges, IPv4 or IPv6. Throws a one-line TypeError naming an entry that is neither.
 */
export function trustedProxies(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address, prefix, extra] = entry.split('/');
    const family = isIP(address ?? '');
    const bits = Number(prefix);
    if (
      family === 0 ||
      extra !== undefined ||
      (prefix !== undefined && (!/^\d+$/.test(prefix) || bits > (family === 4 ? 32 : 128)))
    )
      throw new TypeError(
        `trusted proxy "${entry}" is not an IP address or address/prefix (e.g. 10.0.0.5, 10.0.0.0/24)`,
      );
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(address!, type);
    else list.addSubnet(address!, bits, type);
  }
  return list;
}

/**
 * Tells clients apart. Without trusted proxies the peer's address is the client's: a client's own
 * `X-Forwarded-For` is never read (anyone can write it). Behind a load balancer every peer is the load
 * balancer, so all its clients would share one scope and one client's call could be taken for another's
 * re-issue. A peer listed in --trusted-proxies is believed for the address it appended or set last in
 * `X-Forwarded-For` (walking left past other trusted proxies): a client cannot change that entry, since
 * the proxy writes it after whatever the client sent. Only the proxies that the gateway's port is
 * reachable from should be listed; a client that reaches the gateway directly is not believed.
 */
export class ClientIdentities {
  private readonly trusted: BlockList | undefined;

  constructor(trusted: readonly string[] = []) {
    this.trusted = trusted.length > 0 ? trustedProxies(trusted) : undefined;
  }

  of(req: IncomingMessage): ClientIdentity {
    const address = this.addressOf(req);
    const credentials = req.headers.authorization;
    const who = credentials === undefined ? '' : createHash('sha256').update(credentials).digest('hex').slice(0, 16);
    return { address, scope: `${address ?? ''} ${who}` };
  }

  private addressOf(req: IncomingMessage): string | undefined {
    const peer = req.socket.remoteAddress;
    if (this.trusted === undefined || peer === undefined || !this.isTrusted(plain(peer))) return peer;
    const forwarded = req.headers['x-forwarded-for'];
    if (forwarded === undefined) return peer;
    const hops = (Array.isArray(forwarded) ? forwarded.join(',') : forwarded).split(',');
    for (let i = hops.length - 1, walked = 0; i >= 0 && walked < MAX_HOPS; i--, walked++) {
      const hop = plain(hops[i]!.trim());
      // A malformed entry is the proxy's own configuration error: the proxy, then, is the client.
      if (isIP(hop) === 0) return peer;
      if (!this.isTrusted(hop)) return hop;
    }
    return peer;
  }

  private isTrusted(address: string): boolean {
    return this.trusted!.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
  }
}
