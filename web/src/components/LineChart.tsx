import { boundsOf, pathOf, type Point } from '../lib/chart';
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
}: {
  title: string;
  series: Series[];
  format: (v: number) => string;
  ceiling?: number;
}) {
  const bounds = boundsOf(
    series.flatMap((s) => s.points),
    ceiling,
  );
  const latest = series
    .map((s) => {
      const last = s.points[s.points.length - 1];
      return last ? `${s.label} ${format(last.v)}` : null;
    })
    .filter(Boolean)
    .join(', ');
  return (
    <figure className="chart">
      <figcaption>
        {title}
        {latest ? <span className="muted"> — latest: {latest}</span> : null}
      </figcaption>
      {!bounds ? (
        <p className="state empty">No samples in this range.</p>
      ) : (
        <svg viewBox={`-60 -10 ${width + 70} ${height + 30}`} role="img" aria-label={`${title}, latest: ${latest}`}>
          <line className="axis" x1={0} y1={height} x2={width} y2={height} />
          <line className="axis" x1={0} y1={0} x2={0} y2={height} />
          <text className="tick" x={-6} y={6} textAnchor="end">
            {format(bounds.max)}
          </text>
          <text className="tick" x={-6} y={height} textAnchor="end">
            {format(bounds.min)}
          </text>
          <text className="tick" x={0} y={height + 18}>
            {formatTime(new Date(bounds.from).toISOString())}
          </text>
          <text className="tick" x={width} y={height + 18} textAnchor="end">
            {formatTime(new Date(bounds.to).toISOString())}
          </text>
          {series.map((s) => (
            <path key={s.label} className={`line ${s.className}`} d={pathOf(s.points, bounds, width, height)} />
          ))}
        </svg>
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
