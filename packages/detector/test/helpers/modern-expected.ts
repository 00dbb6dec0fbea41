import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { V2_SERVER_SCENARIO_NAMES } from '@resumewatch/lab';
import type { ScenarioName } from '@resumewatch/lab';
import { FINDING_KINDS } from '@resumewatch/semconv';

// The finding kinds each 2026-07-28 lab scenario gives, read from the one place that promises them to
// users: the detector README's table "The 2026-07-28 era on the lab". A cell's finding kinds are its
// backticked words that are finding kinds; "not run" means no test runs the scenario that way.

export type V2ScenarioName = (typeof V2_SERVER_SCENARIO_NAMES)[number] & ScenarioName;

export interface ModernExpectation {
  /** With the instrumented client and server. */
  clientAndServer: readonly string[];
  /** The gateway's spans alone; undefined when not run. */
  gateway: readonly string[] | undefined;
}

const README = join(import.meta.dirname, '../../README.md');
const HEADER = '| era scenario | client and server spans | gateway spans alone |';
const KINDS = new Set<string>(FINDING_KINDS);

function kindsIn(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).filter((word) => KINDS.has(word));
}

function promised(): Record<V2ScenarioName, ModernExpectation> {
  const readme = readFileSync(README, 'utf8');
  const at = readme.indexOf(HEADER);
  if (at < 0) throw new Error(`the detector README has no table starting "${HEADER}"`);
  const lines = readme.slice(at).split('\n');
  const rows = lines.slice(
    2,
    lines.findIndex((line) => !line.startsWith('|')),
  );
  const byName = new Map<string, ModernExpectation>();
  for (const row of rows) {
    const [scenario, clientAndServer, gateway] = row
      .split('|')
      .slice(1, 4)
      .map((cell) => cell.trim());
    byName.set(scenario!.replace(/`/g, ''), {
      clientAndServer: kindsIn(clientAndServer!),
      gateway: gateway === 'not run' ? undefined : kindsIn(gateway!),
    });
  }
  const out = {} as Record<V2ScenarioName, ModernExpectation>;
  for (const name of V2_SERVER_SCENARIO_NAMES) {
    const expected = byName.get(name);
    if (expected === undefined) throw new Error(`the detector README's 2026-07-28 table has no row for ${name}`);
    out[name] = expected;
  }
  return out;
}

/** Every 2026-07-28 scenario, with the finding kinds promised for it. */
export const MODERN_EXPECTED = promised();
