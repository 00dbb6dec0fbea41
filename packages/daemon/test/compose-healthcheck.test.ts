import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { refusedPort } from '@resumewatch/lab';
import { describe, expect, it } from 'vitest';
import { startServer } from '../src/index.js';

const run = promisify(execFile);
const compose = readFileSync(join(import.meta.dirname, '../../../docker-compose.yml'), 'utf8');

/** The `node -e` script of each detector's healthcheck, as written in docker-compose.yml. */
function healthScripts(): string[] {
  return [...compose.matchAll(/test: \["CMD", "node", "-e", "(.*)"\]/g)].map((m) => JSON.parse(`"${m[1]!}"`) as string);
}

describe('the compose healthcheck of the detectors', () => {
  it('is on both detectors, against /healthz on the metrics port, and on the gateway against its own', () => {
    // One definition for the detectors (detector-1's, anchored), which detector-2 reuses; the gateway's
    // is the same script on its metrics port.
    const scripts = healthScripts();
    expect(scripts).toHaveLength(2);
    expect(scripts[0]).toContain('http://127.0.0.1:9464/healthz');
    expect(scripts[1]).toBe(scripts[0]!.replace('9464', '9466'));
    expect(compose).toMatch(/\n {2}gateway:[\s\S]*?--metrics-port", "9466"[\s\S]*?healthcheck:/);
    expect(compose).toMatch(/detector-1:[\s\S]*?healthcheck: &detector-healthcheck\n/);
    expect(compose).toMatch(/detector-2:[\s\S]*?healthcheck: \*detector-healthcheck\n/);
  });

  it('exits 0 against a serving detector and 1 when nothing answers', async () => {
    const server = await startServer({ port: 0, grpcPort: false, metricsPort: 0, output: null, log: () => undefined });
    const script = healthScripts()[0]!.replace('9464', String(server.metricsPort));
    await expect(run(process.execPath, ['-e', script])).resolves.toBeTruthy();
    await server.close();
    const nothing = healthScripts()[0]!.replace('9464', String(await refusedPort()));
    await expect(run(process.execPath, ['-e', nothing])).rejects.toMatchObject({ code: 1 });
  });
});
