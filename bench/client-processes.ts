/**
 * Client CPU as a user pays it: each variant of a client (bare, instrumented, guarded) runs in a
 * process of its own, so that no variant shares optimised code, inline caches, a heap or a garbage
 * collector with another. The parent starts one child per variant (the benchmark's own script, run
 * again with `--variant-child <name>`), then asks them for rounds in turn, one child working at a time,
 * the order reversed every round. A round's figure is the child's process CPU (user + system, every
 * thread: JavaScript, the garbage collector's and the compiler's threads) over the round's work, as
 * `process.cpuUsage()` counts it in that child. No GC is forced: a round pays for the garbage of the
 * rounds before it in the same process, as a long-running client does.
 *
 * Why not in one process: every variant then runs through the same SDK code, whose optimised code and
 * inline caches are made for all of them at once (a wrapped body and a plain one make the SDK's stream
 * reads polymorphic for both), and a collection caused by one variant's garbage falls in whichever
 * round runs next. The bare client then pays part of the wrapper's cost, and the ratio reads low.
 */
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';

/** The work of one round in a child: resolves with the number of units done (SSE events, requests). */
type RoundWork = () => Promise<number>;

interface RoundReply {
  cpuUs: number;
  units: number;
  error?: string;
}

const CHILD_FLAG = '--variant-child';

/** In a child: the variant it runs, else undefined (the parent). */
export function variantOfChild(): string | undefined {
  const at = process.argv.indexOf(CHILD_FLAG);
  return at === -1 ? undefined : process.argv[at + 1];
}

/** In a child: answers the parent's rounds with `work[kind]` until told to stop. */
export function serveRounds(work: Record<string, RoundWork>, stop: () => Promise<void>): void {
  process.on('message', (message: { kind?: string; stop?: boolean }) => {
    void (async () => {
      if (message.stop) {
        await stop();
        process.send!({ stopped: true }, () => process.exit(0));
        return;
      }
      try {
        const start = process.cpuUsage();
        const units = await work[message.kind!]!();
        const used = process.cpuUsage(start);
        process.send!({ cpuUs: used.user + used.system, units } satisfies RoundReply);
      } catch (error) {
        process.send!({ cpuUs: 0, units: 0, error: String((error as Error)?.stack ?? error) } satisfies RoundReply);
      }
    })();
  });
  process.send!({ ready: true });
}

/** In the parent: one child per variant, running `script` with `args` and the child flag. */
export class VariantProcesses {
  private constructor(private readonly children: Map<string, ChildProcess>) {}

  static async start(script: string, variants: readonly string[], args: readonly string[]): Promise<VariantProcesses> {
    const children = new Map<string, ChildProcess>();
    for (const variant of variants) {
      const child = fork(script, [...args, CHILD_FLAG, variant], {
        execArgv: ['--import', 'tsx'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      process.on('exit', () => child.kill());
      children.set(variant, child);
    }
    for (const [variant, child] of children) {
      const [message] = (await Promise.race([
        once(child, 'message'),
        once(child, 'exit').then(() => {
          throw new Error(`the ${variant} client exited before it was ready`);
        }),
      ])) as [{ ready?: boolean }];
      if (!message.ready) throw new Error(`the ${variant} client did not start`);
    }
    return new VariantProcesses(children);
  }

  /** One round of `kind` in the variant's process: its CPU in microseconds and the units it did. */
  async round(variant: string, kind: string): Promise<RoundReply> {
    const child = this.children.get(variant)!;
    child.send({ kind });
    const [reply] = (await once(child, 'message')) as [RoundReply];
    if (reply.error) throw new Error(`${variant} ${kind}: ${reply.error}`);
    return reply;
  }

  async stop(): Promise<void> {
    for (const child of this.children.values()) {
      child.send({ stop: true });
      await once(child, 'exit');
    }
  }
}

/**
 * Rounds of `kinds`, alternating: `warmup` unmeasured rounds of each, then `rounds` measured, the
 * variants' order reversed every round. Returns, per kind and variant, each round's CPU per unit (µs).
 */
export async function alternatingRounds(
  processes: VariantProcesses,
  variants: readonly string[],
  kinds: readonly string[],
  rounds: number,
  warmup: number,
  expected: Record<string, number>,
): Promise<Record<string, Record<string, number[]>>> {
  const perUnit: Record<string, Record<string, number[]>> = {};
  for (const kind of kinds) perUnit[kind] = Object.fromEntries(variants.map((v) => [v, [] as number[]]));
  for (let r = -warmup; r < rounds; r++) {
    const order = r % 2 === 0 ? variants : [...variants].reverse();
    for (const kind of kinds) {
      for (const variant of order) {
        const { cpuUs, units } = await processes.round(variant, kind);
        if (units !== expected[kind]) throw new Error(`${variant} ${kind}: ${units} units, expected ${expected[kind]}`);
        if (r >= 0) perUnit[kind]![variant]!.push(cpuUs / units);
      }
    }
  }
  return perUnit;
}

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export const range = (xs: readonly number[]): [number, number] => [Math.min(...xs), Math.max(...xs)];

/** Per round, `of` against `base` (same round, back to back): the ratios and the differences. */
export function paired(of: readonly number[], base: readonly number[]): { ratios: number[]; added: number[] } {
  return { ratios: of.map((x, i) => x / base[i]!), added: of.map((x, i) => x - base[i]!) };
}
