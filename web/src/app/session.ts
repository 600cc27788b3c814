// The API token lives in sessionStorage: it survives reloads of the tab and
// is gone when the tab closes. Nothing else about the user is stored.

const tokenKey = 'cairn.token';
const noticeKey = 'cairn.signin-notice';

export function loadToken(): string | null {
  try {
    return sessionStorage.getItem(tokenKey);
  } catch {
    return null;
  }
}

export function saveToken(token: string) {
  sessionStorage.setItem(tokenKey, token);
}

/** Forgets the token; notice, when given, is shown on the sign-in page once. */
export function clearToken(notice?: string) {
  sessionStorage.removeItem(tokenKey);
  if (notice) sessionStorage.setItem(noticeKey, notice);
}

export function takeNotice(): string | null {
  const n = sessionStorage.getItem(noticeKey);
  if (n !== null) sessionStorage.removeItem(noticeKey);
  return n;
}
