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

/**
 * Round values for a value axis: about `count` ticks from min to max, each a
 * multiple of 1, 2, 2.5 or 5 times a power of ten, so a reader can interpolate.
 */
export function niceTicks(min: number, max: number, count = 4): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max) || max <= min) return [min];
  const raw = (max - min) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const out: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

const minute = 60_000;
const timeSteps = [minute, 5 * minute, 10 * minute, 15 * minute, 30 * minute, 60 * minute, 3 * 60 * minute, 6 * 60 * minute, 12 * 60 * minute, 24 * 60 * minute];

/** Times for a time axis: about `count` ticks on whole minutes, hours or days between from and to (ms). */
export function timeTicks(from: number, to: number, count = 4): number[] {
  if (!(to > from)) return [from];
  const raw = (to - from) / count;
  const step = timeSteps.find((s) => s >= raw) ?? Math.ceil(raw / (24 * 60 * minute)) * 24 * 60 * minute;
  const out: number[] = [];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) out.push(t);
  return out;
}

/** How a tick time reads: the time of day within a day's span, the date and hour beyond. */
export function tickLabel(t: number, span: number): string {
  const d = new Date(t);
  if (span <= 24 * 60 * minute) return d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  return d.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit' });
}

/** The point of a series nearest to time t, if any. */
export function nearest(points: readonly Point[], t: number): Point | undefined {
  let best: Point | undefined;
  for (const p of points) if (!best || Math.abs(p.t - t) < Math.abs(best.t - t)) best = p;
  return best;
}
