// Writes the generated monitoring artifacts from the TypeScript definitions and dashboards/src/config.ts:
//   dashboards/generated/*.json         the Grafana dashboards
//   alerts/rules/*.yaml                 the Prometheus recording and alerting rules
//   alerts/test/promtool/*.test.yaml    only their runbook_url lines (the cases are written by hand)
//
//   pnpm --filter @resumewatch/dashboards generate            write the files
//   pnpm --filter @resumewatch/dashboards generate -- --check  fail if the committed files differ
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderedRuleFiles, renewRunbookUrls } from './alerts/index.js';
import { config } from './config.js';
import { dashboards, render } from './index.js';

const repoRoot = join(import.meta.dirname, '..', '..');
const check = process.argv.includes('--check');
const stale: string[] = [];

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Writes (or, with --check, compares) every file of `expected` in `dir`; with `owned`, a file of that
 * suffix the generator does not write is stale too.
 */
function sync(dir: string, expected: Map<string, string>, owned?: string): void {
  mkdirSync(dir, { recursive: true });
  for (const [file, text] of expected) {
    const path = join(dir, file);
    if (readOrUndefined(path) === text) continue;
    if (check) stale.push(join(dir, file).slice(repoRoot.length + 1));
    else {
      writeFileSync(path, text);
      console.log(`wrote ${path}`);
    }
  }
  if (owned === undefined) return;
  for (const file of readdirSync(dir)) {
    if (file.endsWith(owned) && !expected.has(file))
      stale.push(`${join(dir, file).slice(repoRoot.length + 1)} (not generated)`);
  }
}

sync(
  join(repoRoot, 'dashboards', 'generated'),
  new Map(dashboards().map((d) => [d.file, render(d.dashboard)])),
  '.json',
);
sync(join(repoRoot, 'alerts', 'rules'), renderedRuleFiles(config), '.yaml');
const promtoolDir = join(repoRoot, 'alerts', 'test', 'promtool');
const promtoolCases = readdirSync(promtoolDir).filter((f) => f.endsWith('.test.yaml'));
sync(
  promtoolDir,
  new Map(
    promtoolCases.map((f) => [f, renewRunbookUrls(readFileSync(join(promtoolDir, f), 'utf8'), config.runbookBaseUrl)]),
  ),
);

if (stale.length > 0) {
  console.error(
    `generated files are out of date: ${stale.join(', ')}. Run: pnpm --filter @resumewatch/dashboards generate`,
  );
  process.exit(1);
}
