// Writes dashboards/generated/*.json from the TypeScript definitions.
//   pnpm --filter @resumewatch/dashboards generate            write the files
//   pnpm --filter @resumewatch/dashboards generate -- --check  fail if the committed files differ
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dashboards, render } from './index.js';

const outDir = join(import.meta.dirname, '..', 'generated');
const check = process.argv.includes('--check');
mkdirSync(outDir, { recursive: true });

const expected = new Map(dashboards().map((d) => [d.file, render(d.dashboard)]));
const stale: string[] = [];
for (const [file, text] of expected) {
  const path = join(outDir, file);
  let current: string | undefined;
  try {
    current = readFileSync(path, 'utf8');
  } catch {
    current = undefined;
  }
  if (current === text) continue;
  if (check) stale.push(file);
  else {
    writeFileSync(path, text);
    console.log(`wrote ${path}`);
  }
}
for (const file of readdirSync(outDir)) {
  if (file.endsWith('.json') && !expected.has(file)) stale.push(`${file} (not generated)`);
}
if (stale.length > 0) {
  console.error(`dashboards/generated is out of date: ${stale.join(', ')}. Run: pnpm --filter @resumewatch/dashboards generate`);
  process.exit(1);
}
