import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { vi } from 'vitest';
import { FramingError, HttpResponseReader } from './http-response-reader.js';
import type { ResponseHead } from './http-response-reader.js';

/** How one response ended for the client. */
export type ReadEnd =
  /** It ended exactly where its framing says. */
  | 'complete'
  /** The client read the bytes it meant to (`budget`) and stopped before the end. */
  | 'stopped'
  /** The connection closed before the end. */
  | 'broken'
  /** Its bytes do not parse as HTTP/1.1 (the connection is out of step). */
  | 'framing'
  /** The gateway had all there was to send, the connection stayed quiet, and the response was short of its end. */
  | 'stalled'
  /** Nothing settled it within the wait's bound. */
  | 'timeout';

export interface ReadResponse {
  head: ResponseHead | undefined;
  /** Body bytes received, framing removed. */
  body: Buffer;
  end: ReadEnd;
  /** What was wrong, for `framing`, `stalled` and `timeout`. */
  problem?: string;
  /** Raw bytes of this response the client took, head and framing included. */
  bytes: number;
}

/** Quiet polls (20 ms apart, with I/O between them) after which a response the gateway has all of, still short, is stalled. */
const QUIET_POLLS = 5;
const WAIT_MS = 5_000;

interface Reading {
  start: number;
  budget: number;
  head: ResponseHead | undefined;
  body: Buffer[];
  end: ReadEnd | undefined;
  problem: string | undefined;
}

/**
 * A client's HTTP/1.1 connection over a bare `net.Socket`: the test decides which requests go on it
 * (several in one write: pipelining), how many bytes of each response the client reads, and when it
 * destroys the socket. Every byte goes through the strict reader (http-response-reader.ts), so a
 * response whose framing is off, bytes after a response with no request outstanding, or a response
 * that stops short while the gateway is idle, is reported rather than absorbed.
 */
export class SocketConnection {
  /** Problems of the connection rather than of one response: bytes nobody asked for. */
  readonly problems: string[] = [];
  private readonly reader: HttpResponseReader;
  private reading: Reading | undefined;
  /** Requests written whose response has not ended. */
  private outstanding = 0;
  private gone = false;
  private dataEvents = 0;
  private lastEnd: ReadEnd = 'complete';
  private lastCloses = false;
  private strayReported = false;

  private constructor(
    readonly id: number,
    private readonly socket: Socket,
  ) {
    this.reader = new HttpResponseReader({
      head: (head) => {
        if (this.reading) this.reading.head = head;
      },
      body: (bytes) => this.reading?.body.push(bytes),
      end: () => undefined,
    });
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.received(chunk));
    socket.on('error', () => undefined);
    socket.once('close', () => {
      this.gone = true;
      if (this.reading && !this.reading.end) this.settle(this.reader.closed() ? 'complete' : 'broken');
    });
  }

  /** Opens a connection to 127.0.0.1:`port` (bounded by a socket timeout). */
  static open(id: number, port: number): Promise<SocketConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      socket.setTimeout(WAIT_MS, () => socket.destroy(new Error(`connect to 127.0.0.1:${port} timed out`)));
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.setTimeout(0);
        socket.off('error', reject);
        resolve(new SocketConnection(id, socket));
      });
    });
  }

  /** Open, nothing outstanding, its last response read whole and not the last the server sends on it. */
  get reusable(): boolean {
    return !this.gone && this.outstanding === 0 && this.lastEnd === 'complete' && !this.lastCloses;
  }

  get closed(): boolean {
    return this.gone;
  }

  /** Writes the requests in one write: more than one is pipelining. */
  send(requests: readonly string[]): void {
    this.outstanding += requests.length;
    this.socket.write(requests.join(''));
  }

  /**
   * Reads the next response, at most `budget` raw bytes of it, until it ends, the budget is spent, the
   * connection breaks, or it stalls: `sent(gotHead)` (the gateway has had everything it will send for
   * this response, given whether its head arrived) holds for several polls with no byte arriving.
   * Bounded by a 5 s wait.
   */
  async read(budget: number, sent: (gotHead: boolean) => boolean): Promise<ReadResponse> {
    const reading: Reading = {
      start: this.reader.offset,
      budget,
      head: undefined,
      body: [],
      end: undefined,
      problem: undefined,
    };
    this.reading = reading;
    this.pump();
    if (!reading.end && this.gone) this.settle(this.reader.closed() ? 'complete' : 'broken');
    if (!reading.end) {
      let quiet = 0;
      let seen = this.dataEvents;
      try {
        await vi.waitFor(
          () => {
            if (reading.end) return;
            if (sent(reading.head !== undefined) && this.dataEvents === seen) quiet++;
            else [quiet, seen] = [0, this.dataEvents];
            if (quiet >= QUIET_POLLS)
              return this.settle('stalled', `${this.reader.shortfall()}, and nothing more comes`);
            throw new Error('response not settled');
          },
          { timeout: WAIT_MS, interval: 20 },
        );
      } catch {
        this.settle('timeout', `no end within ${WAIT_MS} ms (${this.reader.shortfall()})`);
      }
    }
    this.reading = undefined;
    return {
      head: reading.head,
      body: Buffer.concat(reading.body),
      end: reading.end!,
      ...(reading.problem !== undefined ? { problem: reading.problem } : {}),
      bytes: this.reader.offset - reading.start,
    };
  }

  destroy(): void {
    this.gone = true;
    this.socket.destroy();
  }

  private received(chunk: Buffer): void {
    this.dataEvents++;
    this.reader.push(chunk);
    if (this.reading) this.pump();
    else if (this.outstanding === 0) this.stray();
  }

  /** Parses the current response as far as the bytes and its budget allow. */
  private pump(): void {
    const reading = this.reading!;
    if (reading.end) return;
    const limit = reading.start + reading.budget;
    try {
      if (this.reader.parse(limit)) {
        this.outstanding--;
        this.settle('complete');
        if (this.outstanding === 0) this.stray();
      } else if (this.reader.received >= limit) this.settle('stopped');
    } catch (e) {
      if (!(e instanceof FramingError)) throw e;
      this.settle('framing', e.message);
    }
  }

  private settle(end: ReadEnd, problem?: string): void {
    const reading = this.reading!;
    reading.end = end;
    reading.problem = problem;
    this.lastEnd = end;
    this.lastCloses = reading.head?.closes ?? false;
    if (end === 'framing' || end === 'stalled' || end === 'timeout') this.destroy();
  }

  /** Bytes after the last response with no request outstanding: the connection is out of step. */
  private stray(): void {
    const extra = this.reader.received - this.reader.offset;
    if (extra === 0 || this.strayReported) return;
    this.strayReported = true;
    this.problems.push(
      `${extra} bytes after the last response with no request outstanding: ${JSON.stringify(this.reader.text(60))}`,
    );
  }
}
