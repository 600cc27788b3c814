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

export function jobTarget(j: Pick<JobSummary, 'target' | 'nodeId'>): string {
  if (j.target.nodeId) return j.target.nodeId;
  const sel = j.target.selector.map((l) => `${l.key}=${l.value}`).join(', ');
  return `${j.target.mode === 'ALL' ? 'all of' : 'any of'} ${sel || 'every node'}`;
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
            {showTarget ? <td className="clip">{jobTarget(j)}</td> : null}
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
