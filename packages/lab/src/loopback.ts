import { isIP } from 'node:net';

/** Whether a socket's remote address is a loopback address (127.0.0.0/8, ::1, or IPv4-mapped 127/8). */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (isIP(v4) === 4) return v4.startsWith('127.');
  return address === '::1';
}

/** A host to reach a listener bound to `host` from this process. */
export function reachableHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '::1';
  return host;
}

export function hostForUrl(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host;
}
