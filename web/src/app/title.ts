import { useEffect } from 'react';

/** Sets the document title for the page shown. */
export function useTitle(title: string) {
  useEffect(() => {
    document.title = title ? `${title} · Cairn` : 'Cairn';
  }, [title]);
}
