import { Agent as HttpAgent, type ClientRequest } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * How much sooner than the upstream announced (`Keep-Alive: timeout=N`) the gateway closes an idle
 * connection to it. A request sent on a connection the upstream is closing is lost: ECONNRESET, a 502
 * to the client. The margin covers the time the response's last byte took to reach the gateway, the
 * request's way back and a busy event loop; Node's own agent takes 1 s, undici 2 s.
 */
const KEEP_ALIVE_MARGIN_MS = 1_000;
/**
 * How long a connection stays idle when its upstream announced no timeout (undici's default). Servers
 * that announce none close after 5 s or more (uvicorn, hypercorn) or never.
 */
const UNANNOUNCED_IDLE_MS = 4_000;
/** The longest a connection stays idle whatever the upstream announced (undici's keepAliveMaxTimeout). */
const MAX_IDLE_MS = 600_000;

/** Delay of the first TCP keep-alive probe on an idle connection (Node's agent's default `keepAliveMsecs`). */
const TCP_KEEP_ALIVE_DELAY_MS = 1_000;

/** How long each pooled connection may stay idle, from its last response's `Keep-Alive` (see `noteKeepAlive`). */
const idleLimits = new WeakMap<Duplex, number>();

/**
 * Records how long the connection that carried a response may then stay idle: the upstream's announced
 * keep-alive timeout less the margin, or 0 (not kept) when that leaves nothing.
 */
export function noteKeepAlive(socket: Duplex, keepAlive: string | string[] | undefined): void {
  const text = Array.isArray(keepAlive) ? keepAlive.join(',') : keepAlive;
  if (text !== lastKeepAlive.text) lastKeepAlive = { text, idle: idleOf(text) };
  idleLimits.set(socket, lastKeepAlive.idle);
}

/** The idle time of a `Keep-Alive` field's text (`noteKeepAlive`). */
function idleOf(text: string | undefined): number {
  const announced = text === undefined ? undefined : /(?:^|[\s,;])timeout\s*=\s*(\d+)/i.exec(text)?.[1];
  return announced === undefined
    ? UNANNOUNCED_IDLE_MS
    : Math.min(MAX_IDLE_MS, Math.max(0, Number(announced) * 1_000 - KEEP_ALIVE_MARGIN_MS));
}

/** The last `Keep-Alive` text read and its idle time: an upstream announces the same one on every response. */
let lastKeepAlive: { text: string | undefined; idle: number } = { text: undefined, idle: UNANNOUNCED_IDLE_MS };

/**
 * The agents' `keepSocketAlive`: what Node's does, with the idle time of `noteKeepAlive`. Node's own
 * applies an announced timeout only when it is shorter than the agent's `timeout` option, so without
 * that option it keeps an idle connection until the upstream closes it, and loses the request sent
 * as it does.
 */
function keepIdle(socket: Duplex): boolean {
  const idle = idleLimits.get(socket) ?? UNANNOUNCED_IDLE_MS;
  if (idle <= 0) return false;
  const tcp = socket as Socket;
  tcp.setKeepAlive(true, TCP_KEEP_ALIVE_DELAY_MS);
  tcp.unref();
  // A free socket that times out is destroyed by the agent, and leaves its pool.
  tcp.setTimeout(idle);
  return true;
}

/** Node's own key of a socket's timer (its net module's `kTimeout`), once found. */
let timerKey: symbol | undefined;

/** A timer object of Node's (`Timeout`), live or cleared. */
function isTimer(value: unknown): boolean {
  return typeof value === 'object' && value !== null && '_onTimeout' in value && '_idleTimeout' in value;
}

/**
 * A pooled connection taken for a request carries no idle timer while it is in use (a stream may be
 * silent for long). Node clears the timer but keeps its `Timeout` object on the socket (about 150
 * bytes with its boxed times) for as long as the exchange lasts; dropped here, as Node's socket starts
 * without one (it reads the key only as "a timer, if any"). The key is the socket's own symbol that
 * holds a timer; a Node whose socket has none keeps it.
 */
function inUse(socket: Duplex): void {
  const tcp = socket as unknown as Socket & Record<symbol, unknown>;
  tcp.setTimeout(0);
  timerKey ??= Object.getOwnPropertySymbols(tcp).find((key) => isTimer(tcp[key]));
  if (timerKey !== undefined && isTimer(tcp[timerKey])) tcp[timerKey] = null;
}

/** The gateway's pool of plain HTTP connections to its upstream. */
export class HttpUpstreamAgent extends HttpAgent {
  constructor() {
    super({ keepAlive: true });
  }

  override keepSocketAlive(socket: Duplex): boolean {
    return keepIdle(socket);
  }

  override reuseSocket(socket: Duplex, request: ClientRequest): void {
    super.reuseSocket(socket, request);
    inUse(socket);
  }
}

/** The gateway's pool of TLS connections to its upstream. */
export class HttpsUpstreamAgent extends HttpsAgent {
  constructor(ca: string | undefined) {
    super({ keepAlive: true, ...(ca ? { ca } : {}) });
  }

  override keepSocketAlive(socket: Duplex): boolean {
    return keepIdle(socket);
  }

  override reuseSocket(socket: Duplex, request: ClientRequest): void {
    super.reuseSocket(socket, request);
    inUse(socket);
  }
}
