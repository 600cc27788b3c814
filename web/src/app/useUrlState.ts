import { useCallback, useMemo } from 'react';
import { navigate, usePlace } from '../lib/router';
import { readParams, updateParams, type ParamSpec, type ParamValues } from '../lib/urlState';

/**
 * A page's state in the query string: the values, and a setter that writes
 * changes to the address (a new history entry unless replace is set).
 */
export function useUrlState<S extends ParamSpec>(
  spec: S,
): [ParamValues<S>, (changes: Partial<ParamValues<S>>, opts?: { replace?: boolean }) => void] {
  const place = usePlace();
  const values = useMemo(() => readParams(place.search, spec), [place.search, spec]);
  const set = useCallback(
    (changes: Partial<ParamValues<S>>, opts: { replace?: boolean } = {}) => {
      navigate(window.location.pathname + updateParams(window.location.search, spec, changes), opts);
    },
    [spec],
  );
  return [values, set];
}
