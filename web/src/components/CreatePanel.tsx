import type { FormEvent, ReactNode } from 'react';
import type { Problem } from '../api/errors';
import { Problems } from './states';

/**
 * The folded form that creates one thing on a list page ("New tenant…"):
 * its fields, a submit button that waits while the command runs, and the
 * problems the server answered.
 */
export function CreatePanel({
  summary,
  label,
  submit,
  running,
  problems,
  onSubmit,
  children,
}: {
  /** What the folded panel says: "New tenant…". */
  summary: ReactNode;
  /** The form's accessible name: "new tenant". */
  label: string;
  /** The submit button's text: "Create tenant". */
  submit: string;
  running: boolean;
  problems?: readonly Problem[];
  onSubmit(e: FormEvent): void;
  children: ReactNode;
}) {
  return (
    <details className="panel">
      <summary>{summary}</summary>
      <form onSubmit={onSubmit} noValidate aria-label={label} className="row-form">
        {children}
        <button type="submit" className="primary" disabled={running}>
          {submit}
        </button>
        {problems ? <Problems problems={problems} /> : null}
      </form>
    </details>
  );
}
