// Errors from the API, sorted by what the portal does about them: an
// unauthenticated caller goes back to sign-in, a forbidden action is named,
// everything else is shown where it happened.

export type ErrorCode =
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'INVALID_INPUT'
  | 'INTERNAL'
  | 'NETWORK';

export interface Problem {
  code: ErrorCode;
  message: string;
  /** INVALID_INPUT: the input field at fault, when the server names one. */
  field?: string;
  /** INTERNAL: the id to report; the server's log has the cause. */
  requestId?: string;
  /** CONFLICT from consistentWith or a slow subscription: where to resume. */
  cursor?: string;
  reason?: string;
}

/** The parts of an urql CombinedError (or any GraphQL error response) read here. */
export interface ErrorLike {
  message?: string;
  graphQLErrors?: ReadonlyArray<{ message: string; extensions?: Record<string, unknown> | null }>;
  networkError?: { message: string } | null;
  response?: { status?: number; headers?: { get(name: string): string | null } } | null;
}

const codes: ReadonlySet<string> = new Set([
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'CONFLICT',
  'INVALID_INPUT',
  'INTERNAL',
]);

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** The problems an error carries, one per GraphQL error, or one for the transport. */
export function problemsOf(err: ErrorLike): Problem[] {
  const requestId = err.response?.headers?.get('X-Request-Id') ?? undefined;
  const gql = err.graphQLErrors ?? [];
  if (gql.length > 0) {
    return gql.map((e) => {
      const ext = e.extensions ?? {};
      const code = str(ext.code);
      return {
        code: code && codes.has(code) ? (code as ErrorCode) : 'INTERNAL',
        message: e.message,
        field: str(ext.field),
        requestId: str(ext.requestId) ?? requestId,
        cursor: str(ext.cursor),
        reason: str(ext.reason),
      };
    });
  }
  const status = err.response?.status;
  const message = err.networkError?.message ?? err.message ?? 'the request failed';
  if (status === 401) return [{ code: 'UNAUTHENTICATED', message: 'The token was not accepted.' }];
  if (status === 403) return [{ code: 'FORBIDDEN', message: 'This token may not do that.' }];
  if (status === 413) return [{ code: 'INVALID_INPUT', message: 'The request is too large.' }];
  if (status !== undefined && status >= 500) {
    return [{ code: 'INTERNAL', message: `The server failed (HTTP ${status}).`, requestId }];
  }
  return [{ code: 'NETWORK', message: `Cairn cannot be reached: ${message}` }];
}

/** WebSocket close codes the server uses: 4401 for a token that is missing or no longer valid, 4403 for a forbidden one. */
export function problemOfClose(code: number, reason: string): Problem | undefined {
  if (code === 4401) return { code: 'UNAUTHENTICATED', message: reason || 'The token was not accepted.' };
  if (code === 4403) return { code: 'FORBIDDEN', message: reason || 'This token may not do that.' };
  return undefined;
}

export type ErrorRoute =
  | { to: 'sign-in'; message: string }
  | { to: 'forbidden'; message: string }
  | { to: 'inline'; problems: Problem[] };

/**
 * What to do about an error: UNAUTHENTICATED anywhere means the token is no
 * good and the user signs in again; FORBIDDEN says what is not allowed;
 * anything else is shown in place.
 */
export function routeProblems(problems: readonly Problem[]): ErrorRoute {
  const unauth = problems.find((p) => p.code === 'UNAUTHENTICATED');
  if (unauth) return { to: 'sign-in', message: unauth.message };
  const forbidden = problems.find((p) => p.code === 'FORBIDDEN');
  if (forbidden) return { to: 'forbidden', message: forbidden.message };
  return { to: 'inline', problems: [...problems] };
}

/** A sentence for a problem, with what to do about it. */
export function describe(p: Problem): string {
  switch (p.code) {
    case 'NOT_FOUND':
      return `${p.message} Check the id or the link.`;
    case 'CONFLICT':
      return p.reason === 'SLOW_CONSUMER'
        ? 'Live updates fell behind and were restarted.'
        : `${p.message} Reload, then retry or choose another action.`;
    case 'INTERNAL':
      return p.requestId ? `${p.message} (request ${p.requestId})` : p.message;
    default:
      return p.message;
  }
}
