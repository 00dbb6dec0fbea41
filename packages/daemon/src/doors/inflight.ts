/**
 * The bytes of request bodies held at once across every HTTP request and gRPC message (as received,
 * and again once decompressed). A request that would take it past `max` is shed with 429 /
 * RESOURCE_EXHAUSTED and retry advice, so total memory is bounded whatever the number of clients.
 */
export class InflightBudget {
  used = 0;
  /** Peak of `used`, for tests and the soak figures. */
  peak = 0;
  constructor(readonly max: number) {}

  reserve(n: number): boolean {
    if (this.used + n > this.max) return false;
    this.used += n;
    if (this.used > this.peak) this.peak = this.used;
    return true;
  }

  release(n: number): void {
    this.used = Math.max(0, this.used - n);
  }
}

/** Bytes one request has reserved, released once (when it is answered or its connection goes). */
export class Reservation {
  private held = 0;
  constructor(private readonly budget: InflightBudget) {}

  take(n: number): boolean {
    if (!this.budget.reserve(n)) return false;
    this.held += n;
    return true;
  }

  releaseAll(): void {
    this.budget.release(this.held);
    this.held = 0;
  }
}
