import { holdShape } from './shapes.js';

/** What one body holds of the observer's budget. */
export class Hold {
  bytes = 0;
}

/**
 * The observer's budget of bytes held to parse what passes: JSON bodies read whole, SSE events
 * gathered across chunks, across every body at once (`maxHeldBytes`). A body or event that would pass
 * it is passed on unparsed instead, as one over its own bound is. A body gives its bytes back when it
 * ends, fails or is cancelled, and, should nobody end it (a fetch's body dropped half read), when it
 * is collected.
 *
 * A body's owner is registered with a FinalizationRegistry until it gives its bytes back, and no longer:
 * V8's young-generation collections keep a registered object alive, so an owner left registered after
 * its body ended (every JSON body, each with its request and stream) was copied, promoted to the old
 * generation, and its cell kept until a full collection, every request.
 */
export class HeldBytes {
  /** Bytes held now. */
  total = 0;
  private readonly collected = new FinalizationRegistry<Hold>((hold) => this.release(hold));

  constructor(readonly limit: number) {}

  /**
   * A hold for `owner`, given back if the owner is collected still holding bytes. Once released the hold
   * is done: its owner is no longer watched (every caller releases it last, when its body is over).
   */
  holdFor(owner: object): Hold {
    const hold = new Hold();
    this.collected.register(owner, hold, hold);
    return hold;
  }

  /**
   * Sets what `hold` holds to `bytes`. False, and nothing changed, when that would take the total past
   * the limit, unless `anyway` (a few bytes a body cannot do without).
   */
  set(hold: Hold, bytes: number, anyway = false): boolean {
    const more = bytes - hold.bytes;
    if (more > 0 && !anyway && this.total + more > this.limit) return false;
    this.total += more;
    hold.bytes = bytes;
    return true;
  }

  release(hold: Hold): void {
    this.total -= hold.bytes;
    hold.bytes = 0;
    this.collected.unregister(hold);
  }
}

holdShape(new Hold());
