import { useState, type FormEvent } from 'react';
import { endpoint } from '../api/client';
import { describe, problemsOf, type Problem } from '../api/errors';
import type { Role } from '../api/types';
import { takeNotice } from '../app/session';
import { useTitle } from '../app/title';
import { Field } from '../components/Field';
import { roleNames } from '../lib/roles';

/** Checks a token by asking who it is; returns its role or the problems. */
async function whoIs(token: string): Promise<{ role: Role } | { problems: Problem[] }> {
  let res: Response;
  try {
    res = await fetch(endpoint().http, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: 'query SignIn { viewer { role } }' }),
    });
  } catch (e) {
    return { problems: problemsOf({ networkError: { message: (e as Error).message } }) };
  }
  let body: { data?: { viewer?: { role: Role } }; errors?: { message: string; extensions?: Record<string, unknown> }[] } | undefined;
  try {
    body = await res.json();
  } catch {
    body = undefined;
  }
  if (body?.errors?.length) return { problems: problemsOf({ graphQLErrors: body.errors, response: res }) };
  if (!res.ok || !body?.data?.viewer) return { problems: problemsOf({ response: res, message: `HTTP ${res.status}` }) };
  return { role: body.data.viewer.role };
}

export function SignIn({ onSignedIn }: { onSignedIn(token: string): void }) {
  useTitle('Sign in');
  const [notice] = useState(() => takeNotice());
  const [token, setToken] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    const t = token.trim().replace(/^Bearer\s+/i, '');
    if (t === '') {
      setError('Paste an API token.');
      return;
    }
    setBusy(true);
    setError(undefined);
    const r = await whoIs(t);
    setBusy(false);
    if ('problems' in r) {
      const p = r.problems[0]!;
      setError(p.code === 'UNAUTHENTICATED' ? 'This token was not accepted: it is unknown, expired or revoked.' : describe(p));
      return;
    }
    if (r.role === 'AGENT') {
      setError(`This is a node credential (${roleNames.AGENT}); sign in with a user's API token.`);
      return;
    }
    onSignedIn(t);
  }

  return (
    <main className="signin" id="main">
      <form onSubmit={submit} aria-labelledby="signin-title" noValidate>
        <h1 id="signin-title">Sign in to Cairn</h1>
        {notice ? (
          <p className="notice warn" role="status">
            {notice}
          </p>
        ) : null}
        <Field
          id="token"
          label="API token"
          hint="A token such as cairn_…; an administrator creates one for you. It is kept in this tab only."
          error={error}
        >
          {(a) => (
            <input
              {...a}
              type="password"
              name="token"
              autoComplete="off"
              spellCheck={false}
              autoFocus
              value={token}
              onChange={(e) => setToken(e.target.value)}
            />
          )}
        </Field>
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
