import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const repoRoot = join(import.meta.dirname, '../../../..');

/** The TypeScript source files under `dirs` (relative to the repository root), without node_modules and dist. */
export function sourceFiles(dirs: string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir)) {
      if (entry === 'node_modules' || entry === 'dist') continue;
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.(ts|tsx|mts)$/.test(entry)) out.push(path);
    }
  };
  for (const dir of dirs) walk(join(repoRoot, dir));
  return out;
}
