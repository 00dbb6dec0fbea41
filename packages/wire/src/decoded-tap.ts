import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Zlib } from 'node:zlib';
import type { Transform } from 'node:stream';
import type { BodyTap, ChunkSink } from './body-taps.js';
import type { BodyCoding } from './content-coding.js';
import type { Hold, HeldBytes } from './held-bytes.js';

/**
 * Decoded bytes past which a body is taken for a decompression bomb, when they are also more than
 * `BOMB_RATIO` times the encoded bytes the decoder consumed: text compresses 3 to 20 times, a
 * repetitive JSON list maybe 100 times; deflate's most is about 1,000 (brotli's has no such bound).
 */
const BOMB_FLOOR_BYTES = 1024 * 1024;
const BOMB_RATIO = 256;

/**
 * What a decoder's own state is counted for in the held-bytes budget while its body is open (zlib's
 * inflate: a 32 KiB window, its state and a 16 KiB output chunk; brotli's ring buffer grows with the
 * stream's window, at most 16 MiB, and is counted at a typical size), so that the decoders of many open
 * streams are bounded with everything else the observer holds.
 */
const DECODER_BYTES: Readonly<Record<BodyCoding, number>> = { gzip: 64 * 1024, deflate: 64 * 1024, br: 256 * 1024 };

/** Where the decoded copy's observed bytes go: nowhere (the client gets the encoded bytes, as they came). */
const DISCARD: ChunkSink = { enqueue: () => undefined };

/** What a decoded tap tells the observer. */
export interface DecodedTapHost {
  /** The body could not be read after all (corrupt, a bomb, past the held-bytes budget): it passes unobserved. */
  unreadable(): void;
  /** Observing the decoded copy threw (a defect): counted; the body passes unobserved from there. Never throws. */
  observationFailed(error: unknown): void;
}

function decoderFor(coding: BodyCoding): Transform {
  if (coding === 'gzip') return createGunzip();
  if (coding === 'deflate') return createInflate();
  return createBrotliDecompress();
}

/**
 * Sees an encoded body (`Content-Encoding` gzip, deflate or br) through a decoded copy: each chunk goes
 * to the client at once, as it came, and into a streaming decoder (node:zlib) whose output the inner
 * tap observes (a JSON body's, or an SSE body's that is not filtered: removing an event would mean
 * encoding the body again). The decoder works off the loop's thread, so its output comes later than
 * the chunk: the body's end is observed once it has decoded everything (`settled`).
 *
 * It stands aside (the rest passes unobserved, the observer is told once: `unreadable`) when the data
 * is corrupt, when it decodes to more than `BOMB_RATIO` times its size past `BOMB_FLOOR_BYTES`, or when
 * the decoder's state and the encoded bytes waiting for it would take the observer past its held-bytes budget. What
 * the inner tap holds of decoded bytes is bounded as for any body (maxJsonBodyBytes, maxHeldEventBytes,
 * maxHeldBytes).
 */
export class DecodedTap implements BodyTap {
  private decoder: Transform | undefined;
  private decoded = 0;
  /** Stood aside: nothing more is observed, and the inner tap's end is not (a JSON body's part is not parsed). */
  private aside = false;
  /** The body broke: a decoder error at its end is the truncation's, not corrupt data. */
  private broken = false;
  private whenSettled: (() => void) | undefined = undefined;
  /** Bytes were given to the decoder (an empty body's decoder fails at its end: there is nothing to decode). */
  private given = false;
  private hold: Hold | undefined = undefined;

  private readonly state: number;

  constructor(
    private readonly inner: BodyTap,
    coding: BodyCoding,
    private readonly host: DecodedTapHost,
    private readonly budget: HeldBytes,
  ) {
    this.state = DECODER_BYTES[coding];
    const decoder = (this.decoder = decoderFor(coding));
    decoder.on('data', (chunk: Buffer) => this.decodedChunk(chunk));
    decoder.on('error', () => (this.broken ? this.settle() : this.giveUp(true)));
    decoder.on('end', () => this.settle());
  }

  chunk(chunk: Uint8Array, sink: ChunkSink): boolean {
    sink.enqueue(chunk);
    const decoder = this.decoder;
    if (decoder === undefined) return true;
    // The decoder's state and the encoded bytes waiting for it count in the observer's budget.
    const hold = (this.hold ??= this.budget.holdFor(this));
    if (!this.budget.set(hold, this.state + decoder.writableLength + chunk.length)) this.giveUp(true);
    else {
      this.given = true;
      decoder.write(chunk);
    }
    return true;
  }

  /** Every byte went to the client as it came. */
  rest(): void {}

  /** Runs `then` once the decoder has given out all it was given (at once when it stood aside). */
  settled(then: () => void, broken: boolean): void {
    this.broken = broken;
    const decoder = this.decoder;
    if (decoder === undefined || !this.given) {
      this.stop();
      return then();
    }
    this.whenSettled = then;
    decoder.end();
  }

  end(): void {
    if (!this.aside) {
      this.inner.rest(DISCARD);
      this.inner.end();
    }
    this.release();
  }

  release(): void {
    this.stop();
    this.inner.release();
  }

  private decodedChunk(chunk: Buffer): void {
    if (this.decoder === undefined) return;
    this.decoded += chunk.length;
    // Against the encoded bytes the decoder has consumed (`bytesWritten`), not those queued for it.
    const decoder = this.decoder;
    if (this.decoded > BOMB_FLOOR_BYTES && this.decoded > BOMB_RATIO * (decoder as unknown as Zlib).bytesWritten)
      return this.giveUp(true);
    if (this.hold !== undefined) this.budget.set(this.hold, this.state + decoder.writableLength, true);
    // In the decoder's `data` handler: a throw would reach the event emitter, and end the process.
    try {
      this.inner.chunk(chunk, DISCARD);
    } catch (error) {
      this.host.observationFailed(error);
      this.giveUp(false);
    }
  }

  /**
   * Observing threw (PushedBody): every byte went to the client as it came already (`chunk` gives it out
   * first), so nothing is owed to `sink`; nothing more is decoded or observed.
   */
  standAside(): void {
    this.giveUp(false);
  }

  /** Nothing more is decoded or observed; `unreadable`: for the data (corrupt, a bomb, the budget), told to the host. */
  private giveUp(unreadable: boolean): void {
    if (this.aside) return;
    this.aside = true;
    this.stop();
    this.inner.release();
    if (unreadable) this.host.unreadable();
    this.settle();
  }

  private settle(): void {
    this.stop();
    const then = this.whenSettled;
    this.whenSettled = undefined;
    then?.();
  }

  private stop(): void {
    const decoder = this.decoder;
    if (decoder !== undefined) {
      this.decoder = undefined;
      decoder.removeAllListeners('data');
      decoder.destroy();
    }
    if (this.hold !== undefined) this.budget.release(this.hold);
  }
}
