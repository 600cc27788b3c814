import { useEffect, useRef, useSyncExternalStore, type ReactNode } from 'react';
import { Link } from '../components/Link';
import { navFor, roleNames } from '../lib/roles';
import { usePlace } from '../lib/router';
import { useSession } from './context';

function LiveIndicator() {
  const { live } = useSession();
  const state = useSyncExternalStore(live.subscribe, live.get);
  const text = { idle: 'Live updates idle', connecting: 'Connecting…', live: 'Live', reconnecting: 'Live updates interrupted, retrying…' }[state];
  return (
    <span className={`live live-${state}`} role="status" aria-live="polite">
      <span className="dot" aria-hidden="true" />
      {text}
    </span>
  );
}

export function Layout({ children }: { children: ReactNode }) {
  const { viewer, signOut, api } = useSession();
  const place = usePlace();
  // After moving to another page, focus goes to its content, as a page load would put it at the top.
  const firstPath = useRef(place.path);
  useEffect(() => {
    if (place.path === firstPath.current) return;
    firstPath.current = place.path;
    document.getElementById('main')?.focus({ preventScroll: true });
  }, [place.path]);
  const sections = navFor(viewer.role, api);
  // The item for this page: the longest path that is this page's or a parent of it.
  const current = sections
    .flatMap((s) => s.items)
    .filter((i) => place.path === i.path || place.path.startsWith(`${i.path}/`))
    .sort((a, b) => b.path.length - a.path.length)[0]?.path;
  const who = viewer.name ?? viewer.userId ?? viewer.id;
  return (
    <div className="app">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <Link to="/" className="brand">
          Cairn
        </Link>
        <LiveIndicator />
        <div className="who" data-testid="viewer">
          <span>{who}</span>
          <span className="muted">
            {roleNames[viewer.role]}
            {viewer.tenantId ? ` · ${viewer.tenantId}` : ''}
          </span>
        </div>
        {/* Same tab: GraphiQL reads this tab's sign-in from sessionStorage. */}
        <a href="/graphiql/" title="Explore the GraphQL API signed in as you">
          API explorer
        </a>
        <button type="button" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <nav className="side" aria-label="main">
        {sections.map((s) => (
          <div key={s.title} className="nav-section">
            <h2>{s.title}</h2>
            <ul>
              {s.items.map((item) => {
                return (
                  <li key={item.path}>
                    <Link to={item.path} aria-current={item.path === current ? 'page' : undefined}>
                      {item.label}
                    </Link>
                  </li>
                );
              })}
            </ul>
          </div>
        ))}
      </nav>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}
