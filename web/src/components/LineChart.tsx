import { useState, type PointerEvent } from 'react';
import { boundsOf, nearest, niceTicks, pathOf, tickLabel, timeTicks, type Point } from '../lib/chart';
import { formatTime } from '../lib/format';

export interface Series {
  label: string;
  points: Point[];
  /** A class giving the line its colour: one of line-a, line-b, line-c. */
  className: string;
}

const width = 480;
const height = 140;

/** A dependency-free SVG line chart of one or more series over time. */
export function LineChart({
  title,
  series,
  format,
  ceiling,
  tickUnit = 1,
}: {
  title: string;
  series: Series[];
  format: (v: number) => string;
  ceiling?: number;
  /** The value axis steps in round multiples of this (1024 ** 3 for bytes: whole GiB). */
  tickUnit?: number;
}) {
  const [hover, setHover] = useState<number | null>(null);
  const found = boundsOf(
    series.flatMap((s) => s.points),
    ceiling,
  );
  const yTicks = found ? niceTicks(found.min / tickUnit, found.max / tickUnit).map((v) => v * tickUnit) : [];
  // The axis ends on a tick, so the top line reads as a round value.
  const step = yTicks.length > 1 ? yTicks[1]! - yTicks[0]! : 0;
  if (found && step > 0 && yTicks[yTicks.length - 1]! < found.max) yTicks.push(Number((yTicks[yTicks.length - 1]! + step).toPrecision(12)));
  const bounds = found && yTicks.length > 1 ? { ...found, max: yTicks[yTicks.length - 1]! } : found;
  const latest = series
    .map((s) => {
      const last = s.points[s.points.length - 1];
      return last ? `${s.label} ${format(last.v)}` : null;
    })
    .filter(Boolean)
    .join(', ');
  const span = bounds ? bounds.to - bounds.from : 0;
  const x = (t: number) => (bounds && span > 0 ? ((t - bounds.from) / span) * width : width / 2);
  const y = (v: number) => (bounds ? height - ((v - bounds.min) / (bounds.max - bounds.min)) * height : 0);
  const onMove = (e: PointerEvent<SVGSVGElement>) => {
    if (!bounds) return;
    const box = e.currentTarget.getBoundingClientRect();
    // The viewBox starts 60 units left of the plot and is width + 70 wide.
    const vx = ((e.clientX - box.left) / box.width) * (width + 70) - 60;
    setHover(bounds.from + (Math.min(Math.max(vx, 0), width) / width) * span);
  };
  const at = hover === null ? [] : series.map((s) => ({ s, p: nearest(s.points, hover) })).filter((h) => h.p);
  const atTime = at[0]?.p?.t;
  return (
    <figure className="chart">
      <figcaption>
        {title}
        {latest ? <span className="muted"> — latest: {latest}</span> : null}
      </figcaption>
      {!bounds ? (
        <p className="state empty">No samples in this range.</p>
      ) : (
        <div className="chart-plot">
          <svg
            viewBox={`-60 -10 ${width + 70} ${height + 30}`}
            role="img"
            aria-label={`${title}, latest: ${latest}`}
            onPointerMove={onMove}
            onPointerLeave={() => setHover(null)}
          >
            {yTicks.map((v) => (
              <g key={`y${v}`}>
                <line className="grid" x1={0} y1={y(v)} x2={width} y2={y(v)} />
                <text className="tick" x={-6} y={y(v) + 4} textAnchor="end">
                  {format(v)}
                </text>
              </g>
            ))}
            {timeTicks(bounds.from, bounds.to).map((t) => (
              <g key={`x${t}`}>
                <line className="axis" x1={x(t)} y1={height} x2={x(t)} y2={height + 4} />
                <text className="tick" x={x(t)} y={height + 18} textAnchor="middle">
                  {tickLabel(t, span)}
                </text>
              </g>
            ))}
            <line className="axis" x1={0} y1={height} x2={width} y2={height} />
            <line className="axis" x1={0} y1={0} x2={0} y2={height} />
            {series.map((s) => (
              <path key={s.label} className={`line ${s.className}`} d={pathOf(s.points, bounds, width, height)} />
            ))}
            {atTime !== undefined ? (
              <g className="cursor">
                <line x1={x(atTime)} y1={0} x2={x(atTime)} y2={height} />
                {at.map(({ s, p }) => (
                  <circle key={s.label} className={s.className} cx={x(p!.t)} cy={y(p!.v)} r={3} />
                ))}
              </g>
            ) : null}
          </svg>
          {atTime !== undefined ? (
            <div className="chart-tip" role="status" style={{ left: `${((x(atTime) + 60) / (width + 70)) * 100}%` }}>
              <time dateTime={new Date(atTime).toISOString()}>{formatTime(new Date(atTime).toISOString())}</time>
              {at.map(({ s, p }) => (
                <span key={s.label} className={s.className}>
                  {s.label}: <strong>{format(p!.v)}</strong>
                </span>
              ))}
            </div>
          ) : null}
        </div>
      )}
      {bounds && series.length > 1 ? (
        <ul className="legend">
          {series.map((s) => (
            <li key={s.label} className={s.className}>
              {s.label}
            </li>
          ))}
        </ul>
      ) : null}
    </figure>
  );
}
