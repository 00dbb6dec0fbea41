import type { ServerResponse } from 'node:http';
import { SseParser } from '@resumewatch/wire';

const encoder = new TextEncoder();

/**
 * Ends a replayed SSE response once the replayed events have been written, as the seed's server did
 * when the replayed stream had already finished. The SDK transport keeps every replayed stream open
 * (waiting for live events that, for a finished stream, never come), so the lab ends it at the HTTP
 * layer: it counts the id-bearing events written to the response and ends it when the count reaches
 * what the event store reported it replayed. Ending the response makes the SDK's HTTP adapter cancel
 * the body, which releases the transport's stream mapping and keep-alive timer.
 */
export class ReplayCloseGate {
  private expected: number | undefined;
  private written = 0;
  private ended = false;
  private readonly parser = new SseParser((event) => {
    if (event.id !== undefined) this.written++;
  });

  constructor(private readonly res: ServerResponse) {
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    const flushHeaders = res.flushHeaders.bind(res);
    res.write = ((chunk: unknown, ...rest: unknown[]): boolean => {
      if (this.ended) return true;
      const accepted = write(chunk, ...rest);
      if (chunk instanceof Uint8Array) this.parser.push(chunk);
      else if (typeof chunk === 'string') this.parser.push(encoder.encode(chunk));
      this.endIfDone();
      return accepted;
    }) as ServerResponse['write'];
    res.end = ((...args: unknown[]): ServerResponse => {
      if (this.ended) return res;
      this.ended = true;
      return end(...args);
    }) as ServerResponse['end'];
    res.flushHeaders = (): void => {
      flushHeaders();
      this.endIfDone();
    };
  }

  /** Ends the response after `events` replayed events have been written. */
  endAfter(events: number): void {
    this.expected = events;
    this.endIfDone();
  }

  private endIfDone(): void {
    if (this.ended || this.expected === undefined || !this.res.headersSent || this.written < this.expected) return;
    this.res.end();
  }
}
