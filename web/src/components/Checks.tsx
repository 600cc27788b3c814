import { humanize } from '../lib/format';

/** A group of checkboxes choosing any of several enum values. */
export function Checks<T extends string>({
  legend,
  options,
  value,
  onChange,
}: {
  legend: string;
  options: readonly T[];
  value: readonly string[];
  onChange(next: T[]): void;
}) {
  return (
    <fieldset className="checks">
      <legend>{legend}</legend>
      {options.map((o) => (
        <label key={o}>
          <input
            type="checkbox"
            checked={value.includes(o)}
            onChange={(e) => onChange(e.target.checked ? [...(value as T[]), o] : (value.filter((v) => v !== o) as T[]))}
          />
          {humanize(o)}
        </label>
      ))}
    </fieldset>
  );
}
