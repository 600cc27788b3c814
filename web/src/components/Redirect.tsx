import { useEffect } from 'react';
import { navigate } from '../lib/router';

/** Replaces the current address with `to` once rendered. */
export function Redirect({ to }: { to: string }) {
  useEffect(() => navigate(to, { replace: true }), [to]);
  return null;
}
