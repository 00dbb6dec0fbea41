import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { StreamRecord, WireObserver } from '@resumewatch/wire';

/** One client connection as the proof of receipt needs it. */
export interface ConnectionReceipts {
  /** Responses on the connection not yet written whole (or broken). */
  open: number;
  /**
   * The connection gives no proof, for its life: a request arrived on it while an earlier response was
   * still open (the client pipelines), or a request on it came through an intermediary (a load balancer
   * reads a response whole whatever its client read, and may send another client's request next).
   */
  unproving: boolean;
  /** Streams written whole whose receipt the connection's next request would prove (at most the last one or two). */
  readonly ended: StreamRecord[];
}

/**
 * The proof of receipt a connection gives (issue: "a proxy knows what it wrote, not what the client
 * read"). HTTP/1.1 reuses a connection only once the previous response was read whole, so a client's
 * next request on the same connection, arriving after the response that carried a result was written
 * whole and with no response open, proves the client read that response. Node's `finish` alone proves
 * nothing (the bytes reached the kernel, not the client); a connection that closes after it gives no
 * proof, and neither does a pipelining one, nor one whose peer is an intermediary: a request that bears
 * `Via`, `Forwarded` or `X-Forwarded-For` came through a proxy, which reads each response whole itself
 * and may pass another client's request on the same connection next. A pooling proxy need not mark
 * anything, so this proof is the operator's to turn on (`--trust-connection-reuse`, for clients that
 * connect directly); test/gateway-connection-reuse.test.ts shows a haproxy that pools connections make
 * one client's request prove a result another never read. The cursor, the other proof, is the wire
 * observer's, and holds through any proxy.
 */
export class ReceiptProofs {
  private readonly connections = new WeakMap<Socket, ConnectionReceipts>();

  constructor(
    private readonly observer: WireObserver,
    /** Whether a connection's next request may prove receipt at all (`--trust-connection-reuse`). */
    private readonly enabled: boolean,
  ) {}

  /**
   * A request arrived on `socket` (`viaIntermediary`: it bears an intermediary's mark): the streams its
   * connection wrote whole before are proven received (unless the connection gives no proof), before
   * the request itself is judged.
   */
  requestArrived(socket: Socket, viaIntermediary: boolean): ConnectionReceipts {
    let connection = this.connections.get(socket);
    if (connection === undefined) {
      connection = { open: 0, unproving: !this.enabled, ended: [] };
      this.connections.set(socket, connection);
    }
    if (connection.open > 0 || viaIntermediary) connection.unproving = true;
    else if (!connection.unproving) for (const stream of connection.ended) this.observer.proveReceived(stream);
    connection.ended.length = 0;
    connection.open++;
    return connection;
  }

  /**
   * A response of the connection is over: written whole (`whole`, Node's `finish`), its stream (when it
   * had an observed body) waits for the connection's next request; broken, it waits for nothing.
   */
  responseOver(connection: ConnectionReceipts, stream: StreamRecord | undefined, whole: boolean): void {
    connection.open--;
    if (whole && stream !== undefined && !connection.unproving) connection.ended.push(stream);
  }
}

/** The marks an intermediary (a load balancer, a reverse proxy) leaves on a request it forwards. */
export function viaIntermediary(headers: IncomingHttpHeaders): boolean {
  return headers.via !== undefined || headers.forwarded !== undefined || headers['x-forwarded-for'] !== undefined;
}
