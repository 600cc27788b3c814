import type { Label } from '../api/types';

export function Labels({ labels }: { labels: readonly Label[] }) {
  if (labels.length === 0) return <span className="muted">none</span>;
  return (
    <ul className="labels" aria-label="labels">
      {labels.map((l) => (
        <li key={l.key} className="label">
          {l.key}={l.value}
        </li>
      ))}
    </ul>
  );
}
