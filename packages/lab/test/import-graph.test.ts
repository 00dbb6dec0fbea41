// The lab's modules import each other in one direction: no cycle, type-only imports included (a
// type-only back edge still ties two files together for a reader and for a refactor).
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const srcDir = join(import.meta.dirname, '..', 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return entry.endsWith('.ts') ? [path] : [];
  });
}

/** file → the files of src it imports (relative specifiers, `.js` written for `.ts`). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(srcDir)) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/^(?:import|export)\b[^;]*?from\s+'(\.{1,2}\/[^']+)\.js'/gms)].map((m) =>
      resolve(dirname(file), `${m[1]}.ts`),
    );
    graph.set(file, targets);
  }
  return graph;
}

function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string): void => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'open') {
      found.push([...path.slice(path.indexOf(file)), file].map((f) => relative(srcDir, f)));
      return;
    }
    state.set(file, 'open');
    path.push(file);
    for (const target of graph.get(file) ?? []) visit(target);
    path.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) visit(file);
  return found;
}

describe('lab import graph', () => {
  it('reads the imports of the lab server', () => {
    const graph = importGraph();
    const server = graph.get(join(srcDir, 'lab-server.ts'))!.map((f) => relative(srcDir, f));
    expect(server).toContain('lab-server/routing.ts');
    expect(graph.get(join(srcDir, 'control-endpoint.ts'))!.map((f) => relative(srcDir, f))).toContain(
      'lab-server/types.ts',
    );
  });

  it('has no cycle', () => {
    expect(cycles(importGraph())).toEqual([]);
  });

  it('finds a cycle when there is one', () => {
    const a = join(srcDir, 'a.ts');
    const b = join(srcDir, 'b.ts');
    expect(
      cycles(
        new Map([
          [a, [b]],
          [b, [a]],
        ]),
      ),
    ).toEqual([['a.ts', 'b.ts', 'a.ts']]);
  });
});
