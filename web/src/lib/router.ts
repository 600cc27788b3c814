// A small router over the History API: the path picks the page, the query
// string holds the page's state (see urlState.ts).
import { useSyncExternalStore } from 'react';

export interface Place {
  path: string;
  search: string;
}

const listeners = new Set<() => void>();
let current: Place | undefined;

function read(): Place {
  const { pathname, search } = window.location;
  if (!current || current.path !== pathname || current.search !== search) {
    current = { path: pathname, search };
  }
  return current;
}

function notify() {
  for (const l of listeners) l();
}

function subscribe(l: () => void) {
  listeners.add(l);
  if (listeners.size === 1) window.addEventListener('popstate', notify);
  return () => {
    listeners.delete(l);
    if (listeners.size === 0) window.removeEventListener('popstate', notify);
  };
}

/** The current path and query string; re-renders on navigation. */
export function usePlace(): Place {
  return useSyncExternalStore(subscribe, read, read);
}

/** Goes to `to` (a path with an optional query string) without reloading. */
export function navigate(to: string, opts: { replace?: boolean } = {}) {
  const here = window.location.pathname + window.location.search;
  if (to === here) return;
  if (opts.replace) window.history.replaceState(null, '', to);
  else window.history.pushState(null, '', to);
  notify();
  if (!opts.replace) window.scrollTo(0, 0);
}

/**
 * Matches a path against a pattern such as "/nodes/:id". Returns the decoded
 * parameters, or null when the path does not match.
 */
export function matchPath(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split('/').filter(Boolean);
  const s = path.replace(/\/+$/, '').split('/').filter(Boolean);
  if (p.length !== s.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    const seg = p[i]!;
    const val = s[i]!;
    if (seg.startsWith(':')) {
      try {
        params[seg.slice(1)] = decodeURIComponent(val);
      } catch {
        return null;
      }
    } else if (seg !== val) {
      return null;
    }
  }
  return params;
}

/** Builds a path from a pattern and parameters, encoding each parameter. */
export function buildPath(pattern: string, params: Record<string, string>): string {
  return pattern.replace(/:([A-Za-z]+)/g, (_, name: string) => {
    const v = params[name];
    if (v === undefined) throw new Error(`missing path parameter ${name}`);
    return encodeURIComponent(v);
  });
}
