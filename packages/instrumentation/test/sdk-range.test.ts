import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isSupportedSdk } from '../src/instrumentation.js';

// The CJS require hook patches only the SDK releases the version matrix proves (>=1.24.0 <2), as the
// ESM file definitions do through their version ranges.
const dirs: string[] = [];
function sdkDir(version: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'rw-sdk-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: '@modelcontextprotocol/sdk', version }));
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('isSupportedSdk (the require hook)', () => {
  it('patches 1.24.0 to 1.x, not older 1.x, not 2.x', () => {
    const verdicts = ['1.10.0', '1.23.0', '1.24.0', '1.32.2', '1.99.0', '2.0.0'].map((v) => [
      v,
      isSupportedSdk(sdkDir(v)),
    ]);
    expect(verdicts).toEqual([
      ['1.10.0', false],
      ['1.23.0', false],
      ['1.24.0', true],
      ['1.32.2', true],
      ['1.99.0', true],
      ['2.0.0', false],
    ]);
  });

  it('patches when the version cannot be read (no basedir, no package.json)', () => {
    expect(isSupportedSdk(undefined)).toBe(true);
    expect(isSupportedSdk(join(tmpdir(), 'rw-no-such-dir'))).toBe(true);
  });
});
