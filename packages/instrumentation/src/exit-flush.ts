/**
 * `process.exit()` ends a process without `beforeExit`, so a CLI that exits that way (as most do) would
 * lose the spans still in the batch processor. This holds such an exit until the spans are out: it
 * waits for resume spans still in their replay window (they end on the wire or at the window) and for
 * the flush, then exits with the code asked for. Bounded: after `maxWaitMs` the process exits anyway.
 *
 * While the exit is held the event loop keeps running, so code after a `process.exit()` call runs on
 * (as it would not without the hold); a second `process.exit()` meanwhile changes nothing. A process
 * that recorded nothing exits at once.
 */

export interface PendingWork {
  /** Whether anything was recorded at all; if not, an exit is not held. */
  recorded: boolean;
  openResumes: number;
  pendingHttp: number;
}

export interface ExitHoldOptions {
  /** Longest the exit is held, all in all. Default 10000 ms. */
  maxWaitMs?: number;
  /** Longest to wait for open resume spans before flushing. Default 2500 ms (the replay window, 2000, and a margin). */
  settleMs?: number;
}

const POLL_MS = 25;

export function holdExitUntil(
  flush: () => Promise<void>,
  pending: () => PendingWork,
  options: ExitHoldOptions = {},
): void {
  const exit = process.exit.bind(process);
  const maxWaitMs = options.maxWaitMs ?? 10_000;
  const settleMs = options.settleMs ?? 2_500;
  let held = false;

  const settled = async (): Promise<void> => {
    const until = Date.now() + settleMs;
    for (;;) {
      const work = pending();
      if (work.openResumes === 0 && work.pendingHttp === 0) return;
      if (Date.now() >= until) return;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  };

  process.exit = function exitAfterFlush(code?: number | string | null): never {
    // The first exit decides the code, as it would have ended the process.
    if (held) return undefined as never;
    if (code !== undefined && code !== null) process.exitCode = code;
    // Nothing recorded (a usage error, say): exit at once, as process.exit() does.
    if (!pending().recorded) return exit(process.exitCode);
    held = true;
    const deadline = setTimeout(() => exit(process.exitCode), maxWaitMs);
    void settled()
      .then(flush)
      .finally(() => {
        clearTimeout(deadline);
        exit(process.exitCode);
      });
    return undefined as never;
  } as typeof process.exit;
}
