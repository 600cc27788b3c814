import { describe, expect, it } from 'vitest';
import { describe as explain, problemOfClose, problemsOf, routeProblems } from './errors';

const headers = (id?: string) => ({ get: (n: string) => (n === 'X-Request-Id' ? (id ?? null) : null) });

describe('problemsOf', () => {
  it('reads the code and details of each GraphQL error', () => {
    const p = problemsOf({
      graphQLErrors: [
        { message: 'replicas is too big', extensions: { code: 'INVALID_INPUT', field: 'variables.replicas' } },
        { message: 'read models are behind', extensions: { code: 'CONFLICT', cursor: '42' } },
      ],
    });
    expect(p).toEqual([
      { code: 'INVALID_INPUT', message: 'replicas is too big', field: 'variables.replicas', requestId: undefined, cursor: undefined, reason: undefined },
      { code: 'CONFLICT', message: 'read models are behind', field: undefined, requestId: undefined, cursor: '42', reason: undefined },
    ]);
  });

  it('treats an unknown or missing code as internal, keeping the request id', () => {
    const [p] = problemsOf({ graphQLErrors: [{ message: 'oops', extensions: null }], response: { status: 200, headers: headers('r-1') } });
    expect(p).toMatchObject({ code: 'INTERNAL', requestId: 'r-1' });
  });

  it('maps HTTP statuses when there is no GraphQL error', () => {
    expect(problemsOf({ response: { status: 401 } })[0]!.code).toBe('UNAUTHENTICATED');
    expect(problemsOf({ response: { status: 403 } })[0]!.code).toBe('FORBIDDEN');
    expect(problemsOf({ response: { status: 413 } })[0]!.code).toBe('INVALID_INPUT');
    expect(problemsOf({ response: { status: 502, headers: headers('r-2') } })[0]).toMatchObject({ code: 'INTERNAL', requestId: 'r-2' });
    expect(problemsOf({ networkError: { message: 'Failed to fetch' } })[0]).toMatchObject({
      code: 'NETWORK',
      message: 'Cairn cannot be reached: Failed to fetch',
    });
  });
});

describe('problemOfClose', () => {
  it('knows the server’s close codes', () => {
    expect(problemOfClose(4401, 'token revoked')).toEqual({ code: 'UNAUTHENTICATED', message: 'token revoked' });
    expect(problemOfClose(4403, '')!.code).toBe('FORBIDDEN');
    expect(problemOfClose(1006, '')).toBeUndefined();
  });
});

describe('routeProblems', () => {
  it('sends an unauthenticated caller to sign-in, whatever else failed', () => {
    const r = routeProblems([
      { code: 'NOT_FOUND', message: 'no such node' },
      { code: 'UNAUTHENTICATED', message: 'token expired' },
    ]);
    expect(r).toEqual({ to: 'sign-in', message: 'token expired' });
  });

  it('names what is forbidden', () => {
    expect(routeProblems([{ code: 'FORBIDDEN', message: 'tenants may not drain nodes' }])).toEqual({
      to: 'forbidden',
      message: 'tenants may not drain nodes',
    });
  });

  it('shows anything else in place', () => {
    const problems = [{ code: 'CONFLICT' as const, message: 'service is running' }];
    expect(routeProblems(problems)).toEqual({ to: 'inline', problems });
  });
});

describe('describe', () => {
  it('adds what to do', () => {
    expect(explain({ code: 'CONFLICT', message: 'cannot start: it is running.' })).toBe(
      'cannot start: it is running. Reload, then retry or choose another action.',
    );
    expect(explain({ code: 'INTERNAL', message: 'internal error', requestId: 'abc' })).toBe('internal error (request abc)');
    expect(explain({ code: 'CONFLICT', message: 'x', reason: 'SLOW_CONSUMER' })).toBe('Live updates fell behind and were restarted.');
  });
});
