import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { stringifyDocument } from '@urql/core';
import { useClient, useQuery, type AnyVariables, type TypedDocumentNode } from 'urql';
import { problemOfClose, problemsOf, type Problem } from '../api/errors';
import { serverNow } from '../lib/clock';
import { useLive } from './context';

export interface ApiQuery<D> {
  data: D | undefined;
  fetching: boolean;
  problems: Problem[] | undefined;
  /** Asks again, bypassing the cache, keeping the current data meanwhile. */
  refetch(): void;
}

/**
 * A query whose data stays on screen while it is asked again for the same
 * thing (a live refresh, or a read-your-write with consistentWith); only a
 * different `key` (by default the variables less consistentWith) clears it.
 */
export function useApiQuery<D, V extends AnyVariables>(
  query: TypedDocumentNode<D, V>,
  variables: V,
  opts: { pause?: boolean; key?: string; policy?: 'network-only' | 'cache-and-network' } = {},
): ApiQuery<D> {
  const varsKey = JSON.stringify(variables);
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const vars = useMemo(() => variables, [varsKey]);
  const [result, reexecute] = useQuery<D, V>({ query, variables: vars, pause: opts.pause, requestPolicy: opts.policy } as never);
  const key = opts.key ?? JSON.stringify({ ...(variables as object), consistentWith: undefined });
  const last = useRef<{ key: string; data: D } | undefined>(undefined);
  // A response whose errors left no data carries data: null; keep showing
  // what was read before, beside the problems.
  if (result.data != null) last.current = { key, data: result.data };
  const data = result.data ?? (last.current?.key === key ? last.current.data : undefined);
  const refetch = useCallback(() => reexecute({ requestPolicy: 'network-only' }), [reexecute]);
  return {
    data,
    fetching: result.fetching || result.stale,
    problems: result.error ? problemsOf(result.error) : undefined,
    refetch,
  };
}

/**
 * Runs a subscription while the component is mounted (and not paused),
 * calling onData with each delivery. A subscription that fails is started
 * again after a pause (onError hears of the failure first); onResync is
 * called when a connection comes back after a drop, since deliveries may have
 * been missed meanwhile; onComplete when the server ends it. `after`, read
 * each time the subscription starts (not a reason to start it again), is
 * passed as the subscription's `after` variable.
 */
export function useSubscriptionEffect<D, V extends AnyVariables>(
  doc: TypedDocumentNode<D, V>,
  variables: V,
  onData: (d: D) => void,
  opts: { pause?: boolean; after?: string; onError?: (p: Problem[]) => void; onComplete?: () => void; onResync?: () => void } = {},
) {
  const { ws, live } = useLive();
  const handlers = useRef({ onData, ...opts });
  handlers.current = { onData, ...opts };
  const varsKey = JSON.stringify(variables);
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    if (opts.pause) return;
    let active = true;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let base = live.connections;
    const unsubscribeLive = live.subscribe(() => {
      if (live.connections <= base) return;
      const first = base === 0;
      base = live.connections;
      if (!first) handlers.current.onResync?.();
    });
    const stop = ws.subscribe<D>(
      { query: stringifyDocument(doc), variables: { ...(JSON.parse(varsKey) as Record<string, unknown>), after: handlers.current.after } },
      {
        next: (r) => {
          if (!active) return;
          if (r.errors?.length) handlers.current.onError?.(problemsOf({ graphQLErrors: r.errors as never }));
          if (r.data) handlers.current.onData(r.data as D);
        },
        error: (e) => {
          if (!active) return;
          const problems = subscriptionProblems(e);
          handlers.current.onError?.(problems);
          if (!problems.some((p) => p.code === 'UNAUTHENTICATED' || p.code === 'FORBIDDEN' || p.code === 'NOT_FOUND')) {
            retry = setTimeout(() => setAttempt((n) => n + 1), 3000);
          }
        },
        complete: () => {
          if (active) handlers.current.onComplete?.();
        },
      },
    );
    return () => {
      active = false;
      clearTimeout(retry);
      unsubscribeLive();
      stop();
    };
  }, [ws, live, doc, varsKey, opts.pause, attempt]);
}

function subscriptionProblems(e: unknown): Problem[] {
  if (Array.isArray(e)) return problemsOf({ graphQLErrors: e as never });
  const close = e as { code?: number; reason?: string };
  if (typeof close?.code === 'number') {
    const p = problemOfClose(close.code, close.reason ?? '');
    if (p) return [p];
    return [{ code: 'NETWORK', message: `Live updates were interrupted${close.reason ? `: ${close.reason}` : ''}.` }];
  }
  return problemsOf({ networkError: { message: (e as Error)?.message ?? 'connection failed' } });
}

/**
 * Keeps a query's answer live: each change the subscription reports asks
 * again (at most once per debounce interval). The subscription waits for the
 * first answer and starts after its readModelsCursor, so a change made
 * between the answer and the subscription is heard of, not missed.
 */
export function useLiveAnswer<D extends { readModelsCursor: string }, C, V extends AnyVariables>(
  q: ApiQuery<D>,
  subscription: TypedDocumentNode<C, V>,
  variables: V,
  opts: { live: boolean; debounceMs: number; onChange?: (d: C) => void },
) {
  const refetch = useDebounced(q.refetch, opts.debounceMs);
  const after = q.data?.readModelsCursor;
  useSubscriptionEffect(
    subscription,
    variables,
    (d) => {
      opts.onChange?.(d);
      refetch();
    },
    { pause: !opts.live || after === undefined, after, onResync: refetch },
  );
}

/** Calls fn at most once per `ms`, trailing. */
export function useDebounced(fn: () => void, ms: number): () => void {
  const ref = useRef(fn);
  ref.current = fn;
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  return useCallback(() => {
    if (timer.current !== undefined) return;
    timer.current = setTimeout(() => {
      timer.current = undefined;
      ref.current();
    }, ms);
  }, [ms]);
}

export interface CommandState<D> {
  running: boolean;
  problems: Problem[] | undefined;
  data: D | undefined;
}

/**
 * A mutation as one intended change: it carries a command id, reused when
 * the same change is sent again after a failure so that the server applies it
 * once, and renewed after a success.
 */
export function useCommand<D, I extends object>(
  doc: TypedDocumentNode<D, { input: I }>,
): [(input: I) => Promise<D | undefined>, CommandState<D>, () => void] {
  const client = useClient();
  const commandId = useRef<string>(newId());
  const lastInput = useRef<string>('');
  const [state, setState] = useState<CommandState<D>>({ running: false, problems: undefined, data: undefined });
  const run = useCallback(
    async (input: I) => {
      const inputKey = JSON.stringify(input);
      if (inputKey !== lastInput.current) {
        commandId.current = newId();
        lastInput.current = inputKey;
      }
      setState({ running: true, problems: undefined, data: undefined });
      const r = await client.mutation(doc, { input: { ...input, commandId: commandId.current } }).toPromise();
      if (r.error) {
        setState({ running: false, problems: problemsOf(r.error), data: undefined });
        return undefined;
      }
      commandId.current = newId();
      lastInput.current = '';
      setState({ running: false, problems: undefined, data: r.data });
      return r.data;
    },
    [client, doc],
  );
  const reset = useCallback(() => setState({ running: false, problems: undefined, data: undefined }), []);
  return [run, state, reset];
}

export function newId(): string {
  if (typeof crypto !== 'undefined' && 'randomUUID' in crypto) return crypto.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

/** The current time, refreshed every `ms`, for relative times. */
export function useNow(ms = 30000): number {
  const [now, setNow] = useState(() => serverNow());
  useEffect(() => {
    const t = setInterval(() => setNow(serverNow()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}
