import { formatRelative, formatTime } from '../lib/format';
import { useNow } from '../app/hooks';

/** A time shown relative to now, with the exact time on hover and for screen readers. */
export function Time({ value, absolute }: { value: string | null | undefined; absolute?: boolean }) {
  const now = useNow();
  if (!value) return <span className="muted">—</span>;
  return (
    <time dateTime={value} title={formatTime(value)}>
      {absolute ? formatTime(value) : formatRelative(value, now)}
    </time>
  );
}
