// What a newcomer needs before the two commands of the Quick start is written next to them, and a
// missing external tool fails a test with one line naming it and its package (issue 11, problem 7).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/promql.js';
import { requireTools } from './helpers/required-tools.js';

describe('requirements', () => {
  const path = process.env.PATH;
  afterEach(() => {
    process.env.PATH = path;
  });

  it('a missing promtool, prometheus, amtool, haproxy or chromium fails with one line naming the tool and the apt package', () => {
    const empty = mkdtempSync(join(tmpdir(), 'resumewatch-path-'));
    try {
      process.env.PATH = empty;
      const cases: Array<[string, string]> = [
        ['promtool', 'prometheus'],
        ['prometheus', 'prometheus'],
        ['amtool', 'prometheus-alertmanager'],
        ['haproxy', 'haproxy'],
        ['chromium', 'chromium'],
      ];
      for (const [tool, pkg] of cases) {
        expect(() => requireTools(tool)).toThrow(
          new Error(
            `${tool} is not on the PATH: this test needs Debian's ${pkg} package (sudo apt-get install ${pkg})`,
          ),
        );
      }
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('the README states Node, pnpm, the prometheus, haproxy and chromium packages and Compose v2 next to the Quick start commands', () => {
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    const quickStart = readme.slice(
      readme.indexOf('## Quick start'),
      readme.indexOf('\n## ', readme.indexOf('## Quick start') + 1),
    );
    expect(quickStart).toContain('npm i -g pnpm@12.4.2');
    expect(quickStart).toContain('Node 20.6 or newer');
    expect(quickStart).toContain('sudo apt-get install prometheus prometheus-alertmanager haproxy chromium');
    expect(quickStart).toContain('Compose v2');
    const engines = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
      engines: { node: string };
      packageManager: string;
    };
    expect(engines.engines.node).toBe('>=20.6.0');
    expect(engines.packageManager).toBe('pnpm@12.4.2');
  });
});
