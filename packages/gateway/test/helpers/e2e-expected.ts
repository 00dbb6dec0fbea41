import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LAB_SERVER_SCENARIO_NAMES, type LabServerScenarioName } from '@resumewatch/lab';
import { FINDING_KINDS } from '@resumewatch/semconv';

// The finding kinds each lab scenario gives when the instrumented client observes it, read from the one
// place that promises them to users: the detector README's table "On the lab, end to end" (its
// "client spans" column; test/compose-services.test.ts reads the same table). The parity tests also run
// the instrumented client next to the gateway, so the gateway is held to both.

const README = join(import.meta.dirname, '../../../detector/README.md');
const KINDS = new Set<string>(FINDING_KINDS);

function promisedFindings(): Map<string, string[]> {
  const readme = readFileSync(README, 'utf8');
  const lines = readme.slice(readme.indexOf('| scenario | client spans |')).split('\n');
  const rows = lines.slice(
    2,
    lines.findIndex((line) => !line.startsWith('|')),
  );
  const promised = new Map<string, string[]>();
  const ticked = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  for (const row of rows) {
    const [scenarioCell, clientCell] = row
      .split('|')
      .slice(1, 3)
      .map((c) => c.trim());
    const scenarios = scenarioCell!.startsWith('healthy') ? ['healthy'] : ticked(scenarioCell!);
    for (const s of scenarios)
      promised.set(
        s,
        ticked(clientCell!).filter((k) => KINDS.has(k)),
      );
  }
  return promised;
}

function expectedOfEveryScenario(): Record<LabServerScenarioName, readonly string[]> {
  const promised = promisedFindings();
  const out = {} as Record<LabServerScenarioName, readonly string[]>;
  for (const name of LAB_SERVER_SCENARIO_NAMES) {
    const kinds = promised.get(name);
    if (kinds === undefined) throw new Error(`the detector README's scenario table has no row for ${name}`);
    out[name] = kinds;
  }
  return out;
}

/** Every scenario, with the finding kinds of the instrumented client's view of it. */
export const CLIENT_EXPECTED = expectedOfEveryScenario();
