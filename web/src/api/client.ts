// The GraphQL clients: queries and mutations over HTTP (urql), subscriptions
// over WebSocket (graphql-ws, protocol graphql-transport-ws), both carrying
// the bearer token. Any
// UNAUTHENTICATED answer, or a WebSocket closed with 4401, ends the session.
import { Client, cacheExchange, fetchExchange, mapExchange } from '@urql/core';
import { observeServerDate } from '../lib/clock';
import { createClient as createWSClient, type Client as WSClient } from 'graphql-ws';
import { problemOfClose, problemsOf, type Problem } from './errors';

export type LiveState = 'connecting' | 'live' | 'reconnecting' | 'idle';

export interface ApiClient {
  client: Client;
  /** The WebSocket client the subscriptions use. */
  ws: WSClient;
  /** Closes the WebSocket. */
  dispose(): void;
  live: LiveStore;
}

export class LiveStore {
  private state: LiveState = 'idle';
  /** How many times the WebSocket connected: a reconnect makes pages read again what they may have missed. */
  connections = 0;
  private listeners = new Set<() => void>();
  get = () => this.state;
  set(s: LiveState) {
    if (s === 'live') this.connections++;
    if (s === this.state && s !== 'live') return;
    this.state = s;
    for (const l of this.listeners) l();
  }
  subscribe = (l: () => void) => {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  };
}

export function endpoint(base: Location = window.location): { http: string; ws: string } {
  const ws = base.protocol === 'https:' ? 'wss:' : 'ws:';
  return { http: `${base.origin}/graphql`, ws: `${ws}//${base.host}/graphql` };
}

export function createApiClient(token: string, onUnauthenticated: (p: Problem) => void): ApiClient {
  const urls = endpoint();
  const live = new LiveStore();
  let everConnected = false;
  const ws: WSClient = createWSClient({
    url: urls.ws,
    lazy: true,
    lazyCloseTimeout: 3000,
    keepAlive: 15000,
    retryAttempts: Infinity,
    connectionParams: { authorization: `Bearer ${token}` },
    shouldRetry: (e) => {
      const code = (e as { code?: number } | null)?.code;
      return code !== 4401 && code !== 4403;
    },
    on: {
      connecting: () => live.set(everConnected ? 'reconnecting' : 'connecting'),
      connected: () => {
        everConnected = true;
        live.set('live');
      },
      closed: (e) => {
        const ev = e as { code?: number; reason?: string };
        const p = ev.code !== undefined ? problemOfClose(ev.code, ev.reason ?? '') : undefined;
        if (p?.code === 'UNAUTHENTICATED') onUnauthenticated(p);
        // 1000: closed on purpose, when no subscription needs the connection.
        live.set(ev.code === 1000 ? 'idle' : 'reconnecting');
      },
    },
  });

  const client = new Client({
    url: urls.http,
    requestPolicy: 'cache-and-network',
    // Every operation as a POST: queries stay out of URLs and access logs.
    preferGetMethod: false,
    fetchOptions: () => ({ headers: { authorization: `Bearer ${token}` } }),
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      observeServerDate(res.headers.get('date'));
      return res;
    },
    exchanges: [
      mapExchange({
        onError(error) {
          const p = problemsOf(error).find((x) => x.code === 'UNAUTHENTICATED');
          if (p) onUnauthenticated(p);
        },
      }),
      cacheExchange,
      fetchExchange,
    ],
  });
  return { client, ws, live, dispose: () => void ws.dispose() };
}
