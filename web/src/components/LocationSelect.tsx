import { LocationNamesQuery } from '../api/ops';
import { useApiQuery } from '../app/hooks';

/** A select of the locations, with "any" (or "none") first. */
export function LocationSelect({
  value,
  onChange,
  id = 'node-location',
  label = 'Location',
  empty = 'any',
}: {
  value: string;
  onChange(v: string): void;
  id?: string;
  label?: string;
  empty?: string;
}) {
  const q = useApiQuery(LocationNamesQuery, { first: 200 });
  return (
    <div className="field inline">
      <label htmlFor={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value)} aria-busy={q.fetching}>
        <option value="">{q.problems ? `${empty} (locations unavailable)` : empty}</option>
        {q.data?.locations.edges.map((e) => (
          <option key={e.node.id} value={e.node.id}>
            {e.node.name}
          </option>
        ))}
      </select>
    </div>
  );
}
