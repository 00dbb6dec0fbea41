import type { ServerResponse } from 'node:http';

/**
 * The comment --sse-heartbeat writes: a line beginning with a colon, then a blank line. SSE parsers
 * ignore comments (a comment never dispatches an event, and the blank line after it dispatches nothing,
 * since no field came before it).
 */
const HEARTBEAT = Buffer.from(': heartbeat\n\n', 'latin1');

const CR = 0x0d;
const LF = 0x0a;

/**
 * Keeps a quiet SSE stream alive for what stands between the gateway and its client (a load balancer's
 * idle timeout): when nothing was written to the client for `intervalMs`, one comment, written only at an
 * event boundary, never inside an event. One timer per stream, made only when the option is on, and
 * stopped when the stream is over.
 *
 * The boundary is read from what was written, not from the upstream's parse: the gateway writes an
 * unfiltered stream's bytes as they come, mid-event at times. The stream is at a boundary when nothing was
 * written yet, or when what was written ends with an empty line (an event's end, or blank lines between
 * events): a comment there cannot join an event. Anything else (a line in progress, or a field line not
 * yet closed by its blank line, or an upstream's own comment line) waits: the timer looks again an
 * interval later, and the upstream's next bytes reset it anyway.
 */
export class SseHeartbeat {
  private readonly timer: ReturnType<typeof setTimeout>;
  /** The last (at most four) bytes written, oldest first: enough to see a line end after an empty line. */
  private tail = 0;
  private tailLength = 0;
  /** A heartbeat went out before any byte of the upstream: a byte-order mark it then sends is dropped. */
  private beforeUpstream = true;
  private wroteEarly = false;
  private stopped = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly intervalMs: number,
    private readonly written: () => void,
  ) {
    this.timer = setTimeout(this.fire, intervalMs);
    this.timer.unref();
  }

  /**
   * The upstream's bytes, before they are written to the client: the same bytes, unless a heartbeat went
   * first and they begin with a byte-order mark (only valid at the stream's start; a decoder drops it).
   */
  upstreamBytes(bytes: Uint8Array): Uint8Array {
    if (this.beforeUpstream && bytes.byteLength > 0) {
      this.beforeUpstream = false;
      if (this.wroteEarly && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
    }
    return bytes;
  }

  /** Bytes were written to the client: the quiet interval starts again, and the boundary moves. */
  wrote(bytes: Uint8Array): void {
    const n = bytes.byteLength;
    if (n === 0) return;
    for (let i = Math.max(0, n - 4); i < n; i++) this.tail = ((this.tail << 8) | bytes[i]!) >>> 0;
    this.tailLength = Math.min(4, this.tailLength + n);
    if (!this.stopped) this.timer.refresh();
  }

  /** Whether a comment written now begins a line that no event's field lines are waiting around. */
  atBoundary(): boolean {
    if (this.tailLength === 0) return true;
    const at = (back: number): number => (back < this.tailLength ? (this.tail >>> (8 * back)) & 0xff : -1);
    // The last line's end: CRLF, CR or LF; then the line before it must be empty (another line end right before).
    let back: number;
    if (at(0) === LF && at(1) === CR) back = 2;
    else if (at(0) === LF || at(0) === CR) back = 1;
    else return false;
    const before = at(back);
    return before === LF || before === CR;
  }

  stop = (): void => {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
  };

  private readonly fire = (): void => {
    const res = this.res;
    if (this.stopped || res.destroyed || res.writableEnded) return this.stop();
    // Bytes still queued for the client, or an event in progress: look again an interval later.
    if (res.writableLength === 0 && this.atBoundary()) {
      if (this.beforeUpstream) this.wroteEarly = true;
      res.write(HEARTBEAT);
      this.tail = (this.tail << 16) | (LF << 8) | LF;
      this.tailLength = 4;
      this.written();
    }
    this.timer.refresh();
  };
}
