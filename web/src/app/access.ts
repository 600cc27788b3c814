import { hasMutation, hasQuery, hasSubscription } from '../lib/capabilities';
import { serves, type PageId } from '../lib/pages';
import { can, canSee } from '../lib/roles';
import { useSession } from './context';

/**
 * What the signed-in viewer may do here: a page when the role may see it and
 * the server serves it; an action when the permissions allow it and the
 * server has its mutation; live updates when the server has the subscription.
 */
export function useAccess() {
  const { viewer, api } = useSession();
  return {
    page: (p: PageId) => canSee(viewer.role, p) && serves(api, p),
    act: (permission: string, mutation: string) => can(viewer, permission) && hasMutation(api, mutation),
    query: (field: string) => hasQuery(api, field),
    live: (subscription: string) => hasSubscription(api, subscription),
  };
}
