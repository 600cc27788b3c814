import { useEffect, useRef, useState } from 'react';
import type { JobLogChunk } from '../api/types';

/** A job's output, following the end as lines arrive unless the reader scrolled up. */
export function LogView({ chunks, live }: { chunks: readonly JobLogChunk[]; live: boolean }) {
  const box = useRef<HTMLPreElement>(null);
  const [follow, setFollow] = useState(true);
  useEffect(() => {
    if (follow && box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [chunks, follow]);
  return (
    <div className="log">
      <div className="log-head">
        <span className="muted" role="status" aria-live="polite">
          {chunks.length} chunk{chunks.length === 1 ? '' : 's'}
          {live ? ', streaming' : ''}
        </span>
        <label>
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> Follow the end
        </label>
      </div>
      <pre
        ref={box}
        tabIndex={0}
        aria-label="job output"
        data-testid="job-log"
        onScroll={(e) => {
          const el = e.currentTarget;
          const atEnd = el.scrollHeight - el.scrollTop - el.clientHeight < 8;
          if (atEnd !== follow) setFollow(atEnd);
        }}
      >
        {chunks.length === 0 ? (
          <span className="muted">{live ? 'Waiting for output…' : 'No output.'}</span>
        ) : (
          chunks.map((c) => (
            <span key={c.seq} className={`chunk ${c.stream.toLowerCase()}`} title={`${c.stream} · ${c.time}`}>
              {c.data}
            </span>
          ))
        )}
      </pre>
    </div>
  );
}
