// The committed JSON in dashboards/generated must be exactly what the generator writes.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dashboards, render } from '../src/index.js';

const generatedDir = join(import.meta.dirname, '..', 'generated');

describe('dashboards/generated', () => {
  it('matches the generator, file by file', () => {
    for (const { file, dashboard } of dashboards()) {
      const committed = readFileSync(join(generatedDir, file), 'utf8');
      expect(committed, `${file} is stale: run pnpm --filter @resumewatch/dashboards generate`).toBe(render(dashboard));
    }
  });

  it('holds no file the generator does not write', () => {
    const files = readdirSync(generatedDir).filter((f) => f.endsWith('.json')).sort();
    expect(files).toEqual(dashboards().map((d) => d.file).sort());
  });

  it('is what `generate -- --check` accepts', () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', 'src/generate.ts', '--check'], {
      cwd: join(import.meta.dirname, '..'),
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(out).toBe('');
  });
});
