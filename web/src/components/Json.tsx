/** A JSON value, indented, in a scrollable block. */
export function Json({ value, label }: { value: unknown; label?: string }) {
  if (value === null || value === undefined) return <p className="muted">none</p>;
  return (
    <pre className="json" aria-label={label} tabIndex={0}>
      {JSON.stringify(value, null, 2)}
    </pre>
  );
}
