import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ResumewatchConfig } from '../config.js';

/** Header and body timeouts: a client that sends its headers or body too slowly is cut off. */
export function serverTimeouts(config: ResumewatchConfig) {
  return {
    headersTimeout: config.headerTimeoutMs,
    // Node checks headersTimeout on this interval (30 s by default): check often enough to honour it.
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(config.headerTimeoutMs / 2))),
    // Node's limit on a whole request (5 minutes), kept above the header timeout as Node requires.
    requestTimeout: Math.max(300_000, config.headerTimeoutMs + 1),
  };
}

export function limits(server: Server, config: ResumewatchConfig): Server {
  // A connection silent for --idle-timeout (mid-body or idle) is closed.
  server.setTimeout(config.idleTimeoutMs);
  server.maxConnections = config.maxConnections;
  return server;
}

export function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

export function closeHttp(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      server.closeAllConnections();
      return resolve();
    }
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
