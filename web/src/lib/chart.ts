// Geometry for the statistics charts: data to SVG coordinates.

export interface Point {
  t: number;
  v: number;
}

export interface Bounds {
  min: number;
  max: number;
  from: number;
  to: number;
}

/**
 * The box the points are drawn in: time from first to last sample; values
 * from 0 (or the lowest negative value) to the highest value, or to
 * `ceiling` (100 for percentages) unless a value goes above it.
 */
export function boundsOf(points: readonly Point[], ceiling?: number): Bounds | undefined {
  const ok = points.filter((p) => Number.isFinite(p.t) && Number.isFinite(p.v));
  if (ok.length === 0) return undefined;
  const ts = ok.map((p) => p.t);
  const vs = ok.map((p) => p.v);
  const min = Math.min(0, ...vs);
  let max = Math.max(ceiling ?? -Infinity, ...vs);
  if (max <= min) max = min + 1;
  return { min, max, from: Math.min(...ts), to: Math.max(...ts) };
}

/** An SVG path through the points in a width × height box, y growing downwards. */
export function pathOf(points: readonly Point[], b: Bounds, width: number, height: number): string {
  const span = b.to - b.from;
  const x = (t: number) => (span === 0 ? width / 2 : ((t - b.from) / span) * width);
  const y = (v: number) => height - ((v - b.min) / (b.max - b.min)) * height;
  return points
    .filter((p) => Number.isFinite(p.t) && Number.isFinite(p.v))
    .sort((p, q) => p.t - q.t)
    .map((p, i) => `${i === 0 ? 'M' : 'L'}${round(x(p.t))},${round(y(p.v))}`)
    .join(' ');
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
