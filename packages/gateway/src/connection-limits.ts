import type { Server, ServerOptions } from 'node:http';
import { GatewayRefusal } from '@resumewatch/semconv';
import type { GatewayCounts } from './counts.js';

export interface ConnectionLimits {
  /** Largest request header block in bytes (431 above). */
  maxHeaderBytes: number;
  /** Time a client has to send its request headers (408 after, `headers_timeout`); 0: no limit. */
  headerTimeoutMs: number;
  /** Client connections open at once; one more is closed as it is accepted (`too_many_connections`). */
  maxConnections: number;
}

/**
 * The proxy listener's options for what a client can hold before its request is read: its header block
 * in bytes and in time. The time to send the body is the forwarder's (--body-timeout, answered with a
 * JSON-RPC error); Node's whole-request limit stays off, since a stream lasts as long as its server
 * keeps it.
 */
export function listenerOptions(limits: ConnectionLimits): ServerOptions {
  return {
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.headerTimeoutMs,
    requestTimeout: 0,
    // Node looks for late header blocks on this interval (30 s by default): often enough to honour the timeout.
    ...(limits.headerTimeoutMs > 0
      ? { connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.headerTimeoutMs / 2))) }
      : {}),
  };
}

/**
 * Caps the client connections open at once. A connection past the cap is closed by Node as it is
 * accepted, before a byte is read (it cannot be answered), and counted: every connection costs a file
 * descriptor and memory whatever it sends, and one that never finishes its request holds no exchange
 * slot (--max-streams), so this is what bounds them.
 */
export function capConnections(server: Server, limits: ConnectionLimits, counts: GatewayCounts): void {
  server.maxConnections = limits.maxConnections;
  server.on('drop', () => counts.refused(GatewayRefusal.TOO_MANY_CONNECTIONS));
}
