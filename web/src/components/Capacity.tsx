// Capacity as people read it: what is allocated of what nodes offer, as
// text and as a meter, and a location's nodes by fill as a bar chart.
import type { NodeStatus, Resources } from '../api/types';
import { formatBytes, humanize } from '../lib/format';

function cpus(n: number): string {
  return `${Number.isInteger(n) ? n : n.toFixed(n < 10 ? 2 : 1).replace(/0+$/, '')} CPU`;
}

/** "1.5 of 4 CPU", "2.0 GiB of 8.0 GiB": one dimension, allocated of allocatable. */
export function amountOf(kind: 'cpu' | 'memory' | 'disk', allocated: Resources, allocatable: Resources): string {
  switch (kind) {
    case 'cpu':
      return `${cpus(allocated.cpu).replace(' CPU', '')} of ${cpus(allocatable.cpu)}`;
    case 'memory':
      return `${formatBytes(allocated.memoryBytes)} of ${formatBytes(allocatable.memoryBytes)}`;
    case 'disk':
      return `${formatBytes(allocated.diskBytes)} of ${formatBytes(allocatable.diskBytes)}`;
  }
}

function share(a: number, of: number): number {
  if (of <= 0) return a > 0 ? 1 : 0;
  return Math.min(1, a / of);
}

/** A meter of one dimension, labelled with its amounts. */
export function Meter({ kind, allocated, allocatable }: { kind: 'cpu' | 'memory' | 'disk'; allocated: Resources; allocatable: Resources }) {
  const a = kind === 'cpu' ? allocated.cpu : kind === 'memory' ? allocated.memoryBytes : allocated.diskBytes;
  const of = kind === 'cpu' ? allocatable.cpu : kind === 'memory' ? allocatable.memoryBytes : allocatable.diskBytes;
  const text = amountOf(kind, allocated, allocatable);
  const s = share(a, of);
  return (
    <span className="meter-line">
      <meter min={0} max={1} low={0.7} high={0.9} optimum={0.3} value={s} aria-label={`${kind}: ${text} allocated`} title={`${Math.round(s * 100)} %`} />{' '}
      <span>{text}</span>
    </span>
  );
}

export interface NodeFillBar {
  nodeId: string;
  hostname: string;
  status: NodeStatus;
  fill: number;
}

const barHeight = 14;
const labelWidth = 150;
const chartWidth = 480;

/** The nodes of a location by fill, fullest first, as horizontal bars. */
export function FillChart({ nodes, title }: { nodes: NodeFillBar[]; title: string }) {
  if (nodes.length === 0) return null;
  const height = nodes.length * (barHeight + 4) + 4;
  const barSpace = chartWidth - labelWidth - 50;
  const summary = nodes
    .slice(0, 3)
    .map((n) => `${n.hostname} ${Math.round(n.fill * 100)} %`)
    .join(', ');
  return (
    <figure className="chart">
      <figcaption>{title}</figcaption>
      <svg className="fill-chart" role="img" aria-label={`${title}: ${summary}${nodes.length > 3 ? ', …' : ''}`} viewBox={`0 0 ${chartWidth} ${height}`}>
        {nodes.map((n, i) => {
          const y = 4 + i * (barHeight + 4);
          const w = Math.max(1, Math.min(1, n.fill) * barSpace);
          const cls = n.fill >= 0.9 ? 'bar bar-high' : n.fill >= 0.7 ? 'bar bar-mid' : 'bar';
          return (
            <g key={n.nodeId}>
              <title>{`${n.hostname} (${humanize(n.status)}): ${Math.round(n.fill * 100)} % allocated`}</title>
              <text x={labelWidth - 6} y={y + barHeight - 3} textAnchor="end" className="tick">
                {n.hostname.length > 22 ? `${n.hostname.slice(0, 21)}…` : n.hostname}
              </text>
              <rect x={labelWidth} y={y} width={barSpace} height={barHeight} className="bar-track" />
              <rect x={labelWidth} y={y} width={w} height={barHeight} className={cls} />
              <text x={labelWidth + barSpace + 6} y={y + barHeight - 3} className="tick">
                {Math.round(n.fill * 100)} %
              </text>
            </g>
          );
        })}
      </svg>
    </figure>
  );
}
