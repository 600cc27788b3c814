import { JobChangedSubscription, JobsQuery } from '../../api/ops';
import { jobStatuses, type JobStatus } from '../../api/types';
import { useAccess } from '../../app/access';
import { useApiQuery, useLiveAnswer } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { useUrlState } from '../../app/useUrlState';
import { Checks } from '../../components/Checks';
import { JobTable } from '../../components/JobTable';
import { Link } from '../../components/Link';
import { Pager } from '../../components/Pager';
import { SearchBox } from '../../components/SearchBox';
import { Empty, QueryView } from '../../components/states';

const spec = { status: 'list', node: 'string', children: 'bool', after: 'string' } as const;

export function JobsPage() {
  useTitle('Jobs');
  const access = useAccess();
  const [state, setState] = useUrlState(spec);
  const filter = {
    status: state.status.length ? (state.status as JobStatus[]) : undefined,
    nodeId: state.node || undefined,
    topLevel: state.children ? undefined : true,
  };
  const q = useApiQuery(JobsQuery, { first: 50, after: state.after || null, filter });
  useLiveAnswer(q, JobChangedSubscription, { nodeId: state.node || undefined }, { live: access.live('jobChanged'), debounceMs: 500 });
  return (
    <section>
      <div className="page-head">
        <h1>Jobs</h1>
        {access.page('run-job') && access.act('job.submit', 'submitJob') ? (
          <Link to="/jobs/new" className="button primary">
            Run a job…
          </Link>
        ) : null}
      </div>
      <form className="filters" role="search" aria-label="filter jobs" onSubmit={(e) => e.preventDefault()}>
        <SearchBox id="job-node" label="Node id" value={state.node} onApply={(v) => setState({ node: v, after: '' })} />
        <div className="field inline">
          <label>
            <input type="checkbox" checked={state.children} onChange={(e) => setState({ children: e.target.checked, after: '' })} />
            Include the child jobs of fan-outs
          </label>
        </div>
        <Checks legend="Status" options={jobStatuses} value={state.status} onChange={(v) => setState({ status: v, after: '' })} />
      </form>
      <QueryView {...q} what="Loading jobs">
        {(d) =>
          d.jobs.edges.length === 0 ? (
            <Empty>{state.status.length || state.node ? 'No job matches these filters.' : 'No job has been submitted yet.'}</Empty>
          ) : (
            <>
              <JobTable jobs={d.jobs.edges.map((e) => e.node)} busy={q.fetching} />
              <Pager
                pageInfo={d.jobs.pageInfo}
                atStart={!state.after}
                shown={d.jobs.edges.length}
                total={d.jobs.totalCount}
                onFirst={() => setState({ after: '' })}
                onNext={(c) => setState({ after: c })}
              />
            </>
          )
        }
      </QueryView>
    </section>
  );
}
