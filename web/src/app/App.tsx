import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { Provider } from 'urql';
import { createApiClient } from '../api/client';
import { ViewerQuery } from '../api/ops';
import { Link } from '../components/Link';
import { Redirect } from '../components/Redirect';
import { Loading, Problems } from '../components/states';
import { canSee, homeFor, roleNames } from '../lib/roles';
import { matchPath, navigate, usePlace } from '../lib/router';
import { SignIn } from '../pages/SignIn';
import { LiveContext, SessionContext, useSession, type Session } from './context';
import { useApiQuery } from './hooks';
import { Layout } from './Layout';
import { routes } from './routes';
import { clearToken, loadToken, saveToken } from './session';
import { useTitle } from './title';

export function App() {
  const [token, setToken] = useState(loadToken);
  const place = usePlace();

  const signOut = useCallback((notice?: string) => {
    clearToken(notice);
    setToken(null);
    const here = window.location.pathname + window.location.search;
    // After an expired or revoked token, signing in again returns to the same page.
    const keep = notice !== undefined && !here.startsWith('/sign-in') && here !== '/';
    navigate(keep ? `/sign-in?next=${encodeURIComponent(here)}` : '/sign-in', { replace: true });
  }, []);

  if (!token) {
    if (place.path !== '/sign-in') {
      const next = place.path === '/' ? '' : `?next=${encodeURIComponent(place.path + place.search)}`;
      return <Redirect to={`/sign-in${next}`} />;
    }
    return (
      <SignIn
        onSignedIn={(t) => {
          saveToken(t);
          setToken(t);
        }}
      />
    );
  }
  return <SignedIn key={token} token={token} signOut={signOut} />;
}

function SignedIn({ token, signOut }: { token: string; signOut(notice?: string): void }) {
  const ended = useRef(false);
  const end = useCallback(
    (notice?: string) => {
      if (ended.current) return;
      ended.current = true;
      signOut(notice);
    },
    [signOut],
  );
  const api = useMemo(
    () => createApiClient(token, (p) => end(`You were signed out: ${p.message}`)),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [token],
  );
  useEffect(() => () => api.dispose(), [api]);
  return (
    <Provider value={api.client}>
      <LiveContext.Provider value={api}>
        <ViewerGate end={end} live={api.live} />
      </LiveContext.Provider>
    </Provider>
  );
}

function ViewerGate({ end, live }: { end(notice?: string): void; live: Session['live'] }) {
  const q = useApiQuery(ViewerQuery, {});
  const viewer = q.data?.viewer;
  const session = useMemo<Session | null>(() => (viewer ? { viewer, signOut: end, live } : null), [viewer, end, live]);
  if (!session) {
    if (q.problems) {
      return (
        <main className="signin" id="main">
          <Problems problems={q.problems} title="Cairn could not say who you are." />
          <button type="button" onClick={() => end()}>
            Sign in again
          </button>
        </main>
      );
    }
    return (
      <main className="signin" id="main">
        <Loading what="Signing in" />
      </main>
    );
  }
  if (session.viewer.role === 'AGENT') return <EndSession end={end} notice="A node credential cannot sign in to the portal." />;
  return (
    <SessionContext.Provider value={session}>
      <Layout>
        <Routes />
      </Layout>
    </SessionContext.Provider>
  );
}

function Routes() {
  const place = usePlace();
  const { viewer } = useSession();
  if (place.path === '/' || place.path === '/sign-in') {
    const next = new URLSearchParams(place.search).get('next');
    const target = next && next.startsWith('/') && !next.startsWith('//') ? next : homeFor(viewer.role);
    return <Redirect to={target} />;
  }
  for (const r of routes) {
    const params = matchPath(r.pattern, place.path);
    if (!params) continue;
    if (!canSee(viewer.role, r.page)) return <NotAllowed />;
    const Page = r.component;
    return <Page key={r.pattern + JSON.stringify(params)} params={params} />;
  }
  return <NotFound />;
}

function NotAllowed() {
  const { viewer } = useSession();
  useTitle('Not allowed');
  return (
    <section>
      <h1>Not allowed</h1>
      <p className="notice forbidden" role="alert">
        The role of your token ({roleNames[viewer.role]}) may not open this page. <Link to={homeFor(viewer.role)}>Go to your start page</Link>.
      </p>
    </section>
  );
}

function NotFound() {
  useTitle('Not found');
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        There is no page at this address. <Link to="/">Go to your start page</Link>.
      </p>
    </section>
  );
}

function EndSession({ end, notice }: { end(notice?: string): void; notice: string }) {
  useEffect(() => end(notice), [end, notice]);
  return null;
}
