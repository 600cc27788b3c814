import { describe, expect, it } from 'vitest';
import { nearest, niceTicks, timeTicks } from './chart';

describe('chart axes', () => {
  it('puts value ticks on round numbers', () => {
    expect(niceTicks(0, 100)).toEqual([0, 25, 50, 75, 100]);
    expect(niceTicks(0, 8 * 1024 ** 3, 4)).toEqual([0, 2.5e9, 5e9, 7.5e9]);
    expect(niceTicks(0, 1)).toEqual([0, 0.25, 0.5, 0.75, 1]);
    expect(niceTicks(0, 37)).toEqual([0, 10, 20, 30]);
    expect(niceTicks(5, 5)).toEqual([5]);
  });
  it('puts time ticks on whole minutes and hours', () => {
    const from = Date.UTC(2026, 0, 1, 10, 3, 17);
    const hour = timeTicks(from, from + 3600_000);
    expect(hour.length).toBeGreaterThanOrEqual(3);
    for (const t of hour) expect(t % (15 * 60_000)).toBe(0);
    const week = timeTicks(from, from + 7 * 86400_000);
    for (const t of week) expect(t % 86400_000).toBe(0);
  });
  it('finds the sample nearest to a time', () => {
    const pts = [
      { t: 0, v: 1 },
      { t: 10, v: 2 },
      { t: 20, v: 3 },
    ];
    expect(nearest(pts, 14)).toEqual({ t: 10, v: 2 });
    expect(nearest(pts, 16)).toEqual({ t: 20, v: 3 });
    expect(nearest([], 1)).toBeUndefined();
  });
});
