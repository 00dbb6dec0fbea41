import { randomFillSync } from 'node:crypto';
import type { IdGenerator } from '@opentelemetry/sdk-trace-base';

/** Random bytes drawn at once: 256 span ids (or 128 trace ids) per draw. */
const POOL_BYTES = 2048;

/**
 * Trace and span ids cut from a pool of random bytes that `crypto.randomFillSync` refills when it runs
 * out: one call into the system's generator per 2 KiB of ids, not one (or four `Math.random`s, as the
 * SDK's RandomIdGenerator) per id. Each byte is used once. An id of zero bytes only (invalid in W3C
 * trace context, and 2^-64 likely at most) gets its last byte set to 1, as the SDK's generator does.
 */
export class PooledIdGenerator implements IdGenerator {
  private readonly pool = Buffer.allocUnsafe(POOL_BYTES);
  private offset = POOL_BYTES;

  /** `fill`: the source of the random bytes (a test's own, to see the all-zero case). */
  constructor(private readonly fill: (pool: Buffer) => void = randomFillSync) {}

  generateTraceId(): string {
    return this.next(16);
  }

  generateSpanId(): string {
    return this.next(8);
  }

  private next(bytes: number): string {
    if (this.offset + bytes > POOL_BYTES) {
      this.fill(this.pool);
      this.offset = 0;
    }
    const start = this.offset;
    const end = start + bytes;
    this.offset = end;
    const pool = this.pool;
    let zero = true;
    for (let i = start; i < end; i++)
      if (pool[i] !== 0) {
        zero = false;
        break;
      }
    if (zero) pool[end - 1] = 1;
    return pool.toString('hex', start, end);
  }
}
