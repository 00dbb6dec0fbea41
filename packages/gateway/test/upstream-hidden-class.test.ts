// The request options of a plain target keep one hidden class from request to request. Made as
// `{ ...base, path }`, V8 gave each its own (a spread's copy has a hidden class outside the transition
// tree, and adding `path` to it made a new one every time), so Node's request code met a new hidden
// class at every request and was compiled again and again. V8's own check (%HaveSameMap) needs
// --allow-natives-syntax, so it runs in a child process on the built package (dist), as the CLI tests do.
import { execFileSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const UPSTREAM_JS = pathToFileURL(fileURLToPath(new URL('../dist/upstream.js', import.meta.url))).href;

/** How many of `calls` consecutive plain targets' options had the hidden class of the one before. */
function sameHiddenClass(upstream: string, calls: number): number {
  const script = `
    const { UpstreamTargets } = await import(${JSON.stringify(UPSTREAM_JS)});
    const targets = new UpstreamTargets(new URL(${JSON.stringify(upstream)}));
    let previous = targets.of('/mcp?n=0').options, same = 0;
    for (let i = 1; i < ${calls}; i++) {
      const options = targets.of('/mcp?n=' + i).options;
      if (%HaveSameMap(options, previous)) same++;
      previous = options;
    }
    process.stdout.write(String(same));`;
  const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  return Number(out);
}

describe('UpstreamTargets options', () => {
  it('share one hidden class from request to request, with a port and without', () => {
    expect(sameHiddenClass('http://127.0.0.1:3000/mcp', 200)).toBe(199);
    expect(sameHiddenClass('https://upstream.test/', 200)).toBe(199);
  });
});
