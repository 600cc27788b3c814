import { useMemo } from 'react';
import { LocationNamesQuery } from '../api/ops';
import { useAccess } from './access';
import { useApiQuery } from './hooks';

/** Location names by id, for showing nodes' locations; empty where locations cannot be read. */
export function useLocationNames(): ReadonlyMap<string, string> {
  const access = useAccess();
  const q = useApiQuery(LocationNamesQuery, { first: 500 }, { pause: !access.query('locations') });
  return useMemo(() => new Map((q.data?.locations.edges ?? []).map((e) => [e.node.id, e.node.name])), [q.data]);
}
