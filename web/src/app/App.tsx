import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { gql } from '@urql/core';
import { Provider, useClient } from 'urql';
import { createApiClient } from '../api/client';
import { ViewerQuery } from '../api/ops';
import { Link } from '../components/Link';
import { Redirect } from '../components/Redirect';
import { Loading, Problems } from '../components/states';
import { capabilitiesOf, capabilitiesQuery, everything, type Capabilities } from '../lib/capabilities';
import { serves } from '../lib/pages';
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
  const api = useCapabilities();
  const session = useMemo<Session | null>(() => (viewer && api ? { viewer, api, signOut: end, live } : null), [viewer, api, end, live]);
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
  const { viewer, api } = useSession();
  if (place.path === '/' || place.path === '/sign-in') {
    const next = new URLSearchParams(place.search).get('next');
    const target = next && next.startsWith('/') && !next.startsWith('//') ? next : homeFor(viewer.role, api);
    return target ? <Redirect to={target} /> : <NothingYet />;
  }
  for (const r of routes) {
    const params = matchPath(r.pattern, place.path);
    if (!params) continue;
    if (!canSee(viewer.role, r.page)) return <NotAllowed />;
    if (!serves(api, r.page)) return <NotServed />;
    const Page = r.component;
    return <Page key={r.pattern + JSON.stringify(params)} params={params} />;
  }
  return <NotFound />;
}

function StartLink() {
  const { viewer, api } = useSession();
  const home = homeFor(viewer.role, api);
  return home ? (
    <>
      {' '}
      <Link to={home}>Go to your start page</Link>.
    </>
  ) : null;
}

function NotAllowed() {
  const { viewer } = useSession();
  useTitle('Not allowed');
  return (
    <section>
      <h1>Not allowed</h1>
      <p className="notice forbidden" role="alert">
        The role of your token ({roleNames[viewer.role]}) may not open this page.
        <StartLink />
      </p>
    </section>
  );
}

function NotServed() {
  useTitle('Not available');
  return (
    <section>
      <h1>Not available on this server</h1>
      <p className="notice warn" role="status">
        This server's API does not offer this page's data yet; it appears once the server does.
        <StartLink />
      </p>
    </section>
  );
}

function NothingYet() {
  const { viewer } = useSession();
  useTitle('Cairn');
  return (
    <section>
      <h1>Welcome</h1>
      <p className="notice warn" role="status">
        This server's API offers no page for your role ({roleNames[viewer.role]}) yet.
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
        There is no page at this address.
        <StartLink />
      </p>
    </section>
  );
}

/** The server's root fields, read once per sign-in; undefined while asking. */
function useCapabilities(): Capabilities | undefined {
  const client = useClient();
  const [caps, setCaps] = useState<Capabilities>();
  useEffect(() => {
    let live = true;
    client
      .query(gql(capabilitiesQuery), {}, { requestPolicy: 'network-only' })
      .toPromise()
      // With introspection turned off, every page is offered and the API says what fails.
      .then((r) => live && setCaps(r.error ? everything : capabilitiesOf(r.data)));
    return () => {
      live = false;
    };
  }, [client]);
  return caps;
}

function EndSession({ end, notice }: { end(notice?: string): void; notice: string }) {
  useEffect(() => end(notice), [end, notice]);
  return null;
}
