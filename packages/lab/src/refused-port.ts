import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Linux's default when the kernel's range cannot be read. */
const DEFAULT_EPHEMERAL_LOW = 32768;
/** The lowest port picked: above the well-known and most registered services' ports. */
const LOWEST = 20000;
const ATTEMPTS = 50;

/** The first port the kernel hands out for `listen(0)` and outgoing connections. */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > LOWEST + 1000 ? low : DEFAULT_EPHEMERAL_LOW;
  } catch {
    return DEFAULT_EPHEMERAL_LOW;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/**
 * A loopback port that refuses connections: free now, and below the kernel's ephemeral range. A port
 * taken by `listen(0)` and released is the next thing the kernel hands to another test's `listen(0)`;
 * a port below that range is only taken by someone asking for it by number.
 */
export async function refusedPort(): Promise<number> {
  const high = ephemeralLow();
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const port = LOWEST + Math.floor(Math.random() * (high - LOWEST));
    if (await canListen(port)) return port;
  }
  throw new Error(`refusedPort: no free loopback port in ${LOWEST}-${high - 1} after ${ATTEMPTS} tries`);
}
