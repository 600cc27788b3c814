import type { PageInfo } from '../api/types';

/** Cursor paging: the first page, or the next one after the last edge shown. */
export function Pager({
  pageInfo,
  atStart,
  onFirst,
  onNext,
  shown,
  total,
}: {
  pageInfo: PageInfo;
  atStart: boolean;
  onFirst(): void;
  onNext(cursor: string): void;
  shown: number;
  total?: number | null;
}) {
  return (
    <nav className="pager" aria-label="pages">
      <span className="muted">
        {shown} shown{total != null ? ` of ${total}` : ''}
      </span>
      <button type="button" onClick={onFirst} disabled={atStart}>
        First page
      </button>
      <button
        type="button"
        onClick={() => pageInfo.endCursor && onNext(pageInfo.endCursor)}
        disabled={!pageInfo.hasNextPage || !pageInfo.endCursor}
      >
        Next page
      </button>
    </nav>
  );
}
