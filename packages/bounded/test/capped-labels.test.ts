import { describe, expect, it } from 'vitest';
import { CappedLabels } from '../src/capped-labels.js';

describe('CappedLabels', () => {
  it('gives each key its own label until the cap, then the overflow value, counting the refusals', () => {
    const labels = new CappedLabels<string>(2, 'other');
    expect(labels.labelOf('a')).toBe('a');
    expect(labels.labelOf('b')).toBe('b');
    expect(labels.labelOf('c')).toBe('other');
    expect(labels.labelOf('d')).toBe('other');
    expect(labels.labelOf('c')).toBe('other');
    // Known keys keep their label after the cap was reached.
    expect(labels.labelOf('a')).toBe('a');
    expect(labels.refused).toBe(3);
    expect(labels.keys()).toEqual(['a', 'b', 'other']);
    expect(labels.size).toBe(3);
  });

  it('numbers keys in admission order and sends every refused key to the overflow number', () => {
    const labels = new CappedLabels<string>(3, 'other');
    expect(['x', 'y', 'x', 'z', 'w', 'v'].map((key) => labels.idOf(key))).toEqual([0, 1, 0, 2, 3, 3]);
    expect(labels.keyOf(3)).toBe('other');
    expect(labels.keyOf(4)).toBeUndefined();
    expect(labels.refused).toBe(2);
  });

  it('admits the overflow value itself whatever the cap, and counts it toward the cap when it comes early', () => {
    const full = new CappedLabels<string>(1, 'other');
    full.idOf('a');
    expect(full.labelOf('other')).toBe('other');
    expect(full.refused).toBe(0);
    expect(full.size).toBe(2);

    const early = new CappedLabels<string>(2, 'other');
    expect(['other', 'a', 'b'].map((key) => early.labelOf(key))).toEqual(['other', 'a', 'other']);
    expect(early.keys()).toEqual(['other', 'a']);
    expect(early.refused).toBe(1);
  });

  it('refuses a cap that keeps nothing', () => {
    expect(() => new CappedLabels(0, 'other')).toThrow('cap must be positive, got 0');
  });
});
