// A job's log as it streams: chunks arrive in seq order, possibly again after
// a reconnect; each seq is kept once.
import type { JobLogChunk } from '../api/types';

export function appendChunk(log: readonly JobLogChunk[], chunk: JobLogChunk): readonly JobLogChunk[] {
  const last = log[log.length - 1];
  if (!last || chunk.seq > last.seq) return [...log, chunk];
  if (log.some((c) => c.seq === chunk.seq)) return log;
  return [...log, chunk].sort((a, b) => a.seq - b.seq);
}
