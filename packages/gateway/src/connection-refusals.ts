import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { GatewayErrorCode, GatewayRefusal } from '@resumewatch/semconv';
import type { GatewayCounts } from './counts.js';

/**
 * What Node answers before a request reaches the forwarder, answered and counted like the forwarder's
 * own refusals: a header block over --max-header-bytes (431), a request Node cannot parse (400), and
 * CONNECT (405: the gateway is no tunnel, and forwards only to its upstream).
 */
export function refuseAtConnection(server: Server, counts: GatewayCounts): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    if (error.code === 'HPE_HEADER_OVERFLOW') {
      counts.refused(GatewayRefusal.HEADERS_TOO_LARGE);
      socket.end('HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  });
  server.on('connect', (_req, socket: Duplex) => {
    counts.refused(GatewayRefusal.NOT_PROXIED);
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: GatewayErrorCode.UNAVAILABLE,
        message: 'resumewatch gateway: forwards only to its upstream; CONNECT is not served',
      },
    });
    socket.end(
      `HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, POST, DELETE\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
