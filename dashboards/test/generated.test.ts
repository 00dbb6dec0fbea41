// The committed dashboards (dashboards/generated), alert rules (alerts/rules) and the runbook links of
// the promtool cases must be exactly what the generator writes.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderedRuleFiles, renewRunbookUrls } from '../src/alerts/index.js';
import { config } from '../src/config.js';
import { dashboards, render } from '../src/index.js';

const generatedDir = join(import.meta.dirname, '..', 'generated');
const rulesDir = join(import.meta.dirname, '..', '..', 'alerts', 'rules');
const promtoolDir = join(import.meta.dirname, '..', '..', 'alerts', 'test', 'promtool');

describe('dashboards/generated', () => {
  it('matches the generator, file by file', () => {
    for (const { file, dashboard } of dashboards()) {
      const committed = readFileSync(join(generatedDir, file), 'utf8');
      expect(committed, `${file} is stale: run pnpm --filter @resumewatch/dashboards generate`).toBe(render(dashboard));
    }
  });

  it('holds no file the generator does not write', () => {
    const files = readdirSync(generatedDir)
      .filter((f) => f.endsWith('.json'))
      .sort();
    expect(files).toEqual(
      dashboards()
        .map((d) => d.file)
        .sort(),
    );
  });

  it('writes alerts/rules, file by file, and nothing else there', () => {
    const expected = renderedRuleFiles(config);
    for (const [file, text] of expected) {
      expect(
        readFileSync(join(rulesDir, file), 'utf8'),
        `alerts/rules/${file} is stale: run pnpm --filter @resumewatch/dashboards generate`,
      ).toBe(text);
    }
    expect(
      readdirSync(rulesDir)
        .filter((f) => f.endsWith('.yaml'))
        .sort(),
    ).toEqual([...expected.keys()].sort());
  });

  it('gives every expected alert of the promtool cases the configured runbook link', () => {
    for (const file of readdirSync(promtoolDir).filter((f) => f.endsWith('.test.yaml'))) {
      const text = readFileSync(join(promtoolDir, file), 'utf8');
      expect(text, `${file}: run pnpm --filter @resumewatch/dashboards generate`).toBe(
        renewRunbookUrls(text, config.runbookBaseUrl),
      );
    }
  });

  it('sets each runbook_url of a promtool case from the alertname above it', () => {
    const text = [
      '  - alertname: McpReconnectStorm',
      '    exp_alerts:',
      '      - exp_annotations:',
      '          runbook_url: https://old.example/r.md#x',
      '',
    ].join('\n');
    expect(renewRunbookUrls(text, 'https://runbooks.example/r.md')).toBe(
      text.replace('https://old.example/r.md#x', 'https://runbooks.example/r.md#mcpreconnectstorm'),
    );
    expect(() => renewRunbookUrls('runbook_url: x\n', 'b')).toThrow('runbook_url on line 1 has no alertname above it');
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
