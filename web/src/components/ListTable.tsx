import type { ReactNode } from 'react';
import { Empty } from './states';

/** A column of a ListTable: its header, hidden but for screen readers when srOnly. */
export interface Column {
  header: string;
  srOnly?: boolean;
  /** Leave the column out (a link the viewer cannot follow, say). */
  hidden?: boolean;
}

/**
 * The table of a list page: one header row from the columns (with a last,
 * unlabelled column for row actions when actions is set) and the rows the
 * page renders; or, with no rows, what to say instead.
 */
export function ListTable({
  label,
  columns,
  actions = true,
  busy,
  rows,
  empty,
  children,
}: {
  label?: string;
  columns: Column[];
  actions?: boolean;
  busy?: boolean;
  rows: number;
  empty: ReactNode;
  children: ReactNode;
}) {
  if (rows === 0) return <Empty>{empty}</Empty>;
  return (
    <table aria-busy={busy} aria-label={label}>
      <thead>
        <tr>
          {columns
            .filter((c) => !c.hidden)
            .map((c) => (
              <th scope="col" key={c.header}>
                {c.srOnly ? <span className="sr-only">{c.header}</span> : c.header}
              </th>
            ))}
          {actions ? (
            <th scope="col">
              <span className="sr-only">Actions</span>
            </th>
          ) : null}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
}
