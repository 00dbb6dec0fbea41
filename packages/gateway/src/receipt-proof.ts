import type { Socket } from 'node:net';
import type { StreamRecord, WireObserver } from '@resumewatch/wire';

/** One client connection as the proof of receipt needs it. */
export interface ConnectionReceipts {
  /** Responses on the connection not yet written whole (or broken). */
  open: number;
  /**
   * A request arrived while an earlier response was still open: the client pipelines, so a request
   * proves nothing of what it read. Once seen, for the connection's life.
   */
  pipelined: boolean;
  /** Streams written whole whose receipt the connection's next request would prove (at most the last one or two). */
  readonly ended: StreamRecord[];
}

/**
 * The proof of receipt a connection gives (issue: "a proxy knows what it wrote, not what the client
 * read"). HTTP/1.1 reuses a connection only once the previous response was read whole, so a client's
 * next request on the same connection, arriving after the response that carried a result was written
 * whole and with no response open, proves the client read that response. Node's `finish` alone proves
 * nothing (the bytes reached the kernel, not the client); a connection that closes after it gives no
 * proof, and neither does a pipelining one. The cursor, the other proof, is the wire observer's.
 */
export class ReceiptProofs {
  private readonly connections = new WeakMap<Socket, ConnectionReceipts>();

  constructor(private readonly observer: WireObserver) {}

  /**
   * A request arrived on `socket`: the streams its connection wrote whole before are proven received
   * (unless the connection pipelines), before the request itself is judged.
   */
  requestArrived(socket: Socket): ConnectionReceipts {
    let connection = this.connections.get(socket);
    if (connection === undefined) {
      connection = { open: 0, pipelined: false, ended: [] };
      this.connections.set(socket, connection);
    }
    if (connection.open > 0) connection.pipelined = true;
    else if (!connection.pipelined) for (const stream of connection.ended) this.observer.proveReceived(stream);
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
    if (whole && stream !== undefined && !connection.pipelined) connection.ended.push(stream);
  }
}
