import { useEffect, useRef, useState } from 'react';
import { CancelJobMutation, JobChangedSubscription, JobLogSubscription, JobQuery } from '../../api/ops';
import { finishedJobStatuses, type JobDetail, type JobLogChunk, type JobSummary } from '../../api/types';
import type { Problem } from '../../api/errors';
import { useAccess } from '../../app/access';
import { useApiQuery, useCommand, useLiveAnswer, useSubscriptionEffect } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { ConfirmButton } from '../../components/Confirm';
import { JobTable, jobTarget, jobWhat } from '../../components/JobTable';
import { Json } from '../../components/Json';
import { Link } from '../../components/Link';
import { LogView } from '../../components/LogView';
import { Status } from '../../components/Status';
import { Empty, Problems, QueryView } from '../../components/states';
import { Time } from '../../components/Time';
import { formatBytes, formatDuration } from '../../lib/format';
import { appendChunk } from '../../lib/log';

export function JobPage({ params }: { params: Record<string, string> }) {
  const id = params.id!;
  useTitle(`Job ${id}`);
  const access = useAccess();
  const q = useApiQuery(JobQuery, { id });
  const live = access.live('jobChanged');
  useLiveAnswer(q, JobChangedSubscription, { id }, { live, debounceMs: 200 });
  // Without jobChanged, an unfinished job is read again every 2 s.
  const status = q.data?.job?.status;
  const finished = status !== undefined && finishedJobStatuses.has(status);
  useEffect(() => {
    if (live || finished || !q.data?.job) return;
    const t = setInterval(() => q.refetch(), 2000);
    return () => clearInterval(t);
  }, [live, finished, q.data?.job, q.refetch]);
  return (
    <section>
      <p className="crumbs">
        <Link to="/jobs">Jobs</Link>
      </p>
      <QueryView {...q} what="Loading the job">
        {(d) =>
          !d.job ? (
            <>
              <h1>Job not found</h1>
              <Empty>There is no job {id}.</Empty>
            </>
          ) : (
            <JobView job={d.job} onChanged={q.refetch} />
          )
        }
      </QueryView>
    </section>
  );
}

function JobView({ job, onChanged }: { job: JobDetail; onChanged(): void }) {
  const access = useAccess();
  const [cancel, cancelSt] = useCommand(CancelJobMutation);
  const fanOut = job.target.mode === 'ALL' && !job.parentId;
  return (
    <>
      <div className="page-head">
        <h1>
          Job <code>{job.id}</code> <Status value={job.status} />
        </h1>
        {job.allowedActions.includes('cancel') && access.act('job.cancel', 'cancelJob') ? (
          <ConfirmButton
            danger
            label="Cancel job"
            title="Cancel this job?"
            onConfirm={async () => {
              const r = await cancel({ jobId: job.id, reason: 'cancelled from the portal' });
              if (r) onChanged();
            }}
          >
            The agent stops it; its processes get the stop signal, then are killed after the grace period.
          </ConfirmButton>
        ) : null}
      </div>
      {cancelSt.problems ? <Problems problems={cancelSt.problems} /> : null}
      <dl className="facts">
        <dt>Runs</dt>
        <dd>
          <code>{jobWhat(job)}</code>
        </dd>
        <dt>Target</dt>
        <dd>{jobTarget(job)}</dd>
        <dt>Node</dt>
        <dd>
          {job.nodeId ? (
            access.page('node') ? (
              <Link to={`/nodes/${encodeURIComponent(job.nodeId)}`}>{job.nodeId}</Link>
            ) : (
              <code>{job.nodeId}</code>
            )
          ) : (
            <span className="muted">not yet</span>
          )}
        </dd>
        {job.parentId ? (
          <>
            <dt>Part of</dt>
            <dd>
              <Link to={`/jobs/${encodeURIComponent(job.parentId)}`}>{job.parentId}</Link>
            </dd>
          </>
        ) : null}
        <dt>Submitted</dt>
        <dd>
          <Time value={job.submittedAt} /> by <span title={job.submitter}>{job.submitterName}</span>
        </dd>
        <dt>Ran for</dt>
        <dd>{formatDuration(job.startedAt, job.finishedAt)}</dd>
        <dt>Attempt</dt>
        <dd>{job.attempt}</dd>
        <dt>Timeout</dt>
        <dd>{job.timeoutSeconds} s</dd>
        {job.cancelReason ? (
          <>
            <dt>Cancelled because</dt>
            <dd>{job.cancelReason}</dd>
          </>
        ) : null}
        {job.lostReason ? (
          <>
            <dt>Lost because</dt>
            <dd>{job.lostReason}</dd>
          </>
        ) : null}
      </dl>
      {job.spec.kind === 'SCRIPT' && job.spec.script ? (
        <details>
          <summary>Script ({job.spec.script.interpreter})</summary>
          <pre className="json">{job.spec.script.body}</pre>
        </details>
      ) : null}
      {job.result ? <Result result={job.result} /> : null}
      {fanOut ? (
        <>
          <h2>Nodes</h2>
          {job.counts ? (
            <p>
              {job.counts.succeeded} succeeded, {job.counts.failed} failed, {job.counts.timedOut} timed out, {job.counts.cancelled} cancelled,{' '}
              {job.counts.lost} lost
            </p>
          ) : null}
          {job.children.edges.length > 0 ? (
            <>
              <JobTable jobs={job.children.edges.map((e) => e.node)} />
              <FanOutLog jobs={job.children.edges.map((e) => e.node)} />
            </>
          ) : job.status === 'FAILED' ? (
            <Empty>No node matched the target when the job was spread out, so it failed: a fan-out runs on the nodes that are online then.</Empty>
          ) : (
            <Empty>No node has been given this job yet.</Empty>
          )}
        </>
      ) : (
        <>
          <h2>Output</h2>
          <JobLog jobId={job.id} ended={finishedJobStatuses.has(job.status)} onEnd={onChanged} />
        </>
      )}
    </>
  );
}

function Result({ result }: { result: NonNullable<JobDetail['result']> }) {
  return (
    <>
      <h2>Result</h2>
      <dl className="facts">
        <dt>Exit code</dt>
        <dd data-testid="exit-code">{result.exitCode}</dd>
        {result.error ? (
          <>
            <dt>Error</dt>
            <dd className="bad-text">{result.error}</dd>
          </>
        ) : null}
        <dt>CPU time</dt>
        <dd>{result.cpuTimeMs} ms</dd>
        <dt>Peak memory</dt>
        <dd>{formatBytes(result.peakMemoryBytes)}</dd>
      </dl>
      {result.output !== null && result.output !== undefined ? <Json value={result.output} label="output" /> : null}
    </>
  );
}

// fanOutLogs is how many of a fan-out's children the page follows at once:
// each is a subscription.
const fanOutLogs = 20;

/** A line of a fan-out's combined output, with the node it came from. */
interface TaggedChunk extends JobLogChunk {
  node: string;
  jobId: string;
}

/**
 * The output of a fan-out's children together, in the order it was
 * written, each line tagged with its node's name.
 */
function FanOutLog({ jobs }: { jobs: JobSummary[] }) {
  const [lines, setLines] = useState<readonly TaggedChunk[]>([]);
  const shown = jobs.slice(0, fanOutLogs);
  const add = (c: TaggedChunk) =>
    setLines((ls) => {
      if (ls.some((l) => l.jobId === c.jobId && l.seq === c.seq)) return ls;
      const out = [...ls, c];
      out.sort((a, b) => Date.parse(a.time) - Date.parse(b.time) || a.node.localeCompare(b.node) || a.seq - b.seq);
      return out;
    });
  return (
    <>
      <h2>Output of every node</h2>
      {jobs.length > shown.length ? <p className="muted">The first {shown.length} nodes' output; open a node's job above for the others.</p> : null}
      {shown.map((j) => (
        <ChildLog key={j.id} job={j} onChunk={add} />
      ))}
      <div className="log">
        <pre tabIndex={0} aria-label="output of every node" data-testid="fan-out-log">
          {lines.length === 0 ? (
            <span className="muted">No output yet.</span>
          ) : (
            lines.map((l) => (
              <span key={`${l.jobId}/${l.seq}`} className={`chunk ${l.stream.toLowerCase()}`} title={`${l.node} · ${l.stream} · ${l.time}`}>
                {tagLines(l.node, l.data)}
              </span>
            ))
          )}
        </pre>
      </div>
    </>
  );
}

/** Every line of data, prefixed with [node]. */
function tagLines(node: string, data: string): string {
  const body = data.endsWith('\n') ? data.slice(0, -1) : data;
  return body
    .split('\n')
    .map((line) => `[${node}] ${line}`)
    .join('\n')
    .concat(data.endsWith('\n') ? '\n' : '');
}

/** Follows one child's output and hands each chunk on, tagged. */
function ChildLog({ job, onChunk }: { job: JobSummary; onChunk(c: TaggedChunk): void }) {
  const access = useAccess();
  const node = job.target.node?.hostname ?? job.target.nodeId ?? job.nodeId ?? job.id;
  useSubscriptionEffect(JobLogSubscription, { jobId: job.id, afterSeq: 0 }, (d) => onChunk({ ...d.jobLog, node, jobId: job.id }), {
    pause: !access.live('jobLog'),
  });
  return null;
}

function JobLog({ jobId, ended, onEnd }: { jobId: string; ended: boolean; onEnd(): void }) {
  const access = useAccess();
  const [chunks, setChunks] = useState<readonly JobLogChunk[]>([]);
  const [done, setDone] = useState(false);
  const [problems, setProblems] = useState<Problem[]>();
  // After a failure the subscription starts again after the last chunk received.
  const [from, setFrom] = useState(0);
  const received = useRef(0);
  useSubscriptionEffect(
    JobLogSubscription,
    { jobId, afterSeq: from },
    (d) => {
      setProblems(undefined);
      received.current = Math.max(received.current, d.jobLog.seq);
      setChunks((log) => appendChunk(log, d.jobLog));
    },
    {
      onError: (p) => {
        setProblems(p);
        setFrom(received.current);
      },
      // The log ends with the job: read the job again for its result.
      onComplete: () => {
        setDone(true);
        onEnd();
      },
      pause: !access.live('jobLog'),
    },
  );
  return (
    <>
      {problems && !done ? <Problems problems={problems} /> : null}
      <LogView chunks={chunks} live={!done && !ended} />
    </>
  );
}
