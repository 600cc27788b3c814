import type { ReactNode } from 'react';
import { describe, routeProblems, type Problem } from '../api/errors';

export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <p className="state loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" /> {what}…
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="state empty">{children}</p>;
}

/**
 * Problems from the API where they happened. UNAUTHENTICATED never gets here
 * for long: the client ends the session and the sign-in page takes over.
 */
export function Problems({ problems, title }: { problems: readonly Problem[]; title?: string }) {
  const route = routeProblems(problems);
  if (route.to === 'forbidden') {
    return (
      <div className="notice forbidden" role="alert">
        <strong>Not allowed.</strong> {route.message} Your token's role does not permit this; use a token with a role that
        does, or ask an administrator.
      </div>
    );
  }
  if (route.to === 'sign-in') {
    return (
      <div className="notice error" role="alert">
        <strong>Signed out.</strong> {route.message}
      </div>
    );
  }
  return (
    <div className="notice error" role="alert">
      {title ? <strong>{title} </strong> : null}
      {route.problems.length === 1 ? (
        describe(route.problems[0]!)
      ) : (
        <ul>
          {route.problems.map((p, i) => (
            <li key={i}>{describe(p)}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** Loading, error or the content, for a query's result. */
export function QueryView<D>({
  data,
  fetching,
  problems,
  children,
  what,
}: {
  data: D | null | undefined;
  fetching: boolean;
  problems: Problem[] | undefined;
  children: (data: D) => ReactNode;
  what?: string;
}) {
  if (data == null) {
    if (problems) return <Problems problems={problems} />;
    if (fetching) return <Loading what={what} />;
    return <Loading what={what} />;
  }
  return (
    <>
      {problems ? <Problems problems={problems} /> : null}
      {children(data)}
    </>
  );
}
