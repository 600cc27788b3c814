import type { JobSummary } from '../api/types';
import { formatDuration } from '../lib/format';
import { Link } from './Link';
import { Status } from './Status';
import { Time } from './Time';

/** What a job runs, in a few words. */
export function jobWhat(j: Pick<JobSummary, 'spec'>): string {
  switch (j.spec.kind) {
    case 'ACTION':
      return j.spec.action ?? 'action';
    case 'EXEC':
      return j.spec.exec?.argv.join(' ') ?? 'program';
    case 'SCRIPT':
      return `${j.spec.script?.interpreter ?? 'script'} script`;
    default:
      return j.spec.kind;
  }
}

const operatorText: Record<string, (k: string, v: string[]) => string> = {
  EQUALS: (k, v) => `${k}=${v[0] ?? ''}`,
  NOT_EQUALS: (k, v) => `${k}!=${v[0] ?? ''}`,
  IN: (k, v) => `${k} in (${v.join(',')})`,
  NOT_IN: (k, v) => `${k} notin (${v.join(',')})`,
  EXISTS: (k) => k,
  NOT_EXISTS: (k) => `!${k}`,
};

export function jobTarget(j: Pick<JobSummary, 'target' | 'nodeId'>, locationName: (id: string) => string = (id) => id): string {
  const t = j.target;
  if (t.nodeId) return t.node?.hostname ?? t.nodeId;
  const parts = [
    ...t.selector.map((l) => `${l.key}=${l.value}`),
    ...(t.requirements ?? []).map((r) => (operatorText[r.operator] ?? ((k: string) => k))(r.key, r.values)),
  ];
  let set = parts.join(', ');
  if (t.location) set = `${set ? `${set} ` : 'nodes '}in ${locationName(t.location)}`;
  return `${t.mode === 'ALL' ? 'all of' : 'any of'} ${set || 'every node'}`;
}

export function JobTable({ jobs, busy, showTarget = true }: { jobs: JobSummary[]; busy?: boolean; showTarget?: boolean }) {
  return (
    <table aria-busy={busy} data-testid="jobs">
      <thead>
        <tr>
          <th scope="col">Job</th>
          <th scope="col">Runs</th>
          {showTarget ? <th scope="col">Target</th> : null}
          <th scope="col">Status</th>
          <th scope="col">Submitted</th>
          <th scope="col">Took</th>
        </tr>
      </thead>
      <tbody>
        {jobs.map((j) => (
          <tr key={j.id}>
            <td>
              <Link to={`/jobs/${encodeURIComponent(j.id)}`}>
                <code>{j.id}</code>
              </Link>
            </td>
            <td className="clip">{jobWhat(j)}</td>
            {showTarget ? (
              <td className="clip" title={j.target.nodeId ?? undefined}>
                {jobTarget(j)}
              </td>
            ) : null}
            <td>
              <Status value={j.status} />
            </td>
            <td>
              <Time value={j.submittedAt} />
            </td>
            <td>{j.startedAt ? formatDuration(j.startedAt, j.finishedAt) : <span className="muted">—</span>}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
