import { describe, expect, it } from 'vitest';
import { RateLimitedLine } from '../src/rate-limited-line.js';

describe('RateLimitedLine', () => {
  it('writes at most its burst per interval, and tells with the next line how many it left out', () => {
    const written: string[] = [];
    let now = 0;
    const lines = new RateLimitedLine(
      60_000,
      2,
      (line) => void written.push(line),
      () => now,
    );
    for (let i = 0; i < 5; i++) lines.line(`defect ${i}`);
    expect(written).toEqual(['defect 0\n', 'defect 1\n']);
    now = 59_999;
    lines.line('defect 5');
    expect(written).toHaveLength(2);
    now = 60_000;
    lines.line('defect 6');
    lines.line('defect 7');
    lines.line('defect 8');
    expect(written.slice(2)).toEqual(['defect 6 (4 more like it left out)\n', 'defect 7\n']);
  });
});
