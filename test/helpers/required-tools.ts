import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The Debian package of each external tool the tests run. */
const DEBIAN_PACKAGE: Record<string, string> = {
  promtool: 'prometheus',
  prometheus: 'prometheus',
  amtool: 'prometheus-alertmanager',
  alertmanager: 'prometheus-alertmanager',
  haproxy: 'haproxy',
  chromium: 'chromium',
};

function onPath(cmd: string): boolean {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, cmd), constants.X_OK);
      return true;
    } catch {
      // Not in this directory.
    }
  }
  return false;
}

/**
 * Fails with one line naming the missing tool and the package that has it, instead of a raw spawn
 * ENOENT. The README's Quick start lists these packages next to `pnpm test`.
 */
export function requireTools(...cmds: string[]): void {
  for (const cmd of cmds) {
    if (onPath(cmd)) continue;
    const pkg = DEBIAN_PACKAGE[cmd] ?? cmd;
    const error = new Error(
      `${cmd} is not on the PATH: this test needs Debian's ${pkg} package (sudo apt-get install ${pkg})`,
    );
    error.stack = error.message;
    throw error;
  }
}
