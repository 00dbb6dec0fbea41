import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { GatewayErrorCode, GatewayRefusal } from '@resumewatch/semconv';
import type { GatewayCounts } from './counts.js';

/**
 * What Node answers before a request reaches the forwarder, answered and counted like the forwarder's
 * own refusals: a header block over --max-header-bytes (431), one not in within --header-timeout (408),
 * a request Node cannot parse (400), and CONNECT (405: the gateway is no tunnel, and forwards only to its
 * upstream).
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
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      // Only the header block is timed by Node here (its whole-request limit is off): see listenerOptions.
      counts.refused(GatewayRefusal.HEADERS_TIMEOUT);
      socket.end(
        rawAnswer('408 Request Timeout', GatewayErrorCode.TIMEOUT, 'request headers not in within --header-timeout'),
      );
      return;
    }
    socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  });
  server.on('connect', (_req, socket: Duplex) => {
    counts.refused(GatewayRefusal.NOT_PROXIED);
    socket.end(
      rawAnswer(
        '405 Method Not Allowed',
        GatewayErrorCode.UNAVAILABLE,
        'forwards only to its upstream; CONNECT is not served',
        'Allow: GET, POST, DELETE\r\n',
      ),
    );
  });
}

/** A whole response with a JSON-RPC error body, written on the socket itself; the connection closes after it. */
function rawAnswer(status: string, code: number, message: string, headers = ''): string {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: null,
    error: { code, message: `resumewatch gateway: ${message}` },
  });
  return `HTTP/1.1 ${status}\r\n${headers}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}
