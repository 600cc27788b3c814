import { createContext, useContext } from 'react';
import type { Viewer } from '../api/types';
import type { Client as WSClient } from 'graphql-ws';
import type { LiveStore } from '../api/client';
import type { Capabilities } from '../lib/capabilities';

export interface Session {
  viewer: Viewer;
  /** What the server's API serves. */
  api: Capabilities;
  signOut(notice?: string): void;
  live: LiveStore;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a signed-in page');
  return s;
}

export interface Live {
  ws: WSClient;
  live: LiveStore;
}

export const LiveContext = createContext<Live | null>(null);

export function useLive(): Live {
  const l = useContext(LiveContext);
  if (!l) throw new Error('useLive outside a signed-in page');
  return l;
}
