import { useEffect, useMemo, useState } from 'react';
import {
  DecommissionNodeMutation,
  DrainNodeMutation,
  JobChangedSubscription,
  JobsQuery,
  NodeChangedSubscription,
  NodeQuery,
  NodeStatsQuery,
  UndrainNodeMutation,
} from '../../api/ops';
import type { NodeDetail, NodeFacts } from '../../api/types';
import { useAccess } from '../../app/access';
import { useApiQuery, useCommand, useLiveAnswer } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { useLocationNames } from '../../app/useLocationNames';
import { useUrlState } from '../../app/useUrlState';
import { ConfirmButton } from '../../components/Confirm';
import { JobTable } from '../../components/JobTable';
import { Labels } from '../../components/Labels';
import { LineChart } from '../../components/LineChart';
import { Link } from '../../components/Link';
import { Status } from '../../components/Status';
import { Empty, Problems, QueryView } from '../../components/states';
import { Time } from '../../components/Time';
import { formatBytes } from '../../lib/format';

export function NodePage({ params }: { params: Record<string, string> }) {
  const id = params.id!;
  const [cw, setCw] = useState<string>();
  const access = useAccess();
  const q = useApiQuery(NodeQuery, { id, consistentWith: cw });
  const node = q.data?.node;
  useTitle(node?.hostname ?? 'Node');
  useLiveAnswer(q, NodeChangedSubscription, { id }, { live: access.live('nodeChanged'), debounceMs: 300 });

  return (
    <section>
      <p className="crumbs">
        <Link to="/nodes">Nodes</Link>
      </p>
      <QueryView {...q} what="Loading the node">
        {(d) =>
          !d.node ? (
            <>
              <h1>Node not found</h1>
              <Empty>There is no node {id}.</Empty>
            </>
          ) : (
            <NodeView node={d.node} onChanged={setCw} />
          )
        }
      </QueryView>
    </section>
  );
}

function NodeView({ node, onChanged }: { node: NodeDetail; onChanged(cursor: string): void }) {
  const access = useAccess();
  const locations = useLocationNames();
  return (
    <>
      <div className="page-head">
        <h1>
          {node.hostname} <Status value={node.status} />
        </h1>
        <div className="actions">
          {access.page('run-job') && access.act('job.submit', 'submitJob') ? <Link to={`/jobs/new?node=${encodeURIComponent(node.id)}`} className="button">Run a job…</Link> : null}
          <NodeActions node={node} onChanged={onChanged} />
        </div>
      </div>
      <dl className="facts">
        <dt>Id</dt>
        <dd>
          <code>{node.id}</code>
        </dd>
        <dt>Location</dt>
        <dd>{node.locationId ? (locations.get(node.locationId) ?? node.locationId) : <span className="muted">none</span>}</dd>
        <dt>Labels</dt>
        <dd>
          <Labels labels={node.labels} />
        </dd>
        <dt>Enrolled</dt>
        <dd>
          <Time value={node.enrolledAt} />
        </dd>
        <dt>Connected</dt>
        <dd>
          <Time value={node.connectedAt} />
        </dd>
        {node.disconnectedAt ? (
          <>
            <dt>Disconnected</dt>
            <dd>
              <Time value={node.disconnectedAt} />
            </dd>
          </>
        ) : null}
        {node.cordoned ? (
          <>
            <dt>Drain</dt>
            <dd>{node.drainReason ?? 'requested'}</dd>
          </>
        ) : null}
      </dl>
      <Facts facts={node.facts} at={node.factsAt} />
      <Statistics id={node.id} />
      {access.query('jobs') ? <RecentJobs nodeId={node.id} /> : null}
    </>
  );
}

function RecentJobs({ nodeId }: { nodeId: string }) {
  const access = useAccess();
  const q = useApiQuery(JobsQuery, { first: 10, filter: { nodeId } });
  useLiveAnswer(q, JobChangedSubscription, { nodeId }, { live: access.live('jobChanged'), debounceMs: 500 });
  return (
    <>
      <h2>Recent jobs</h2>
      <QueryView {...q} what="Loading jobs">
        {(d) =>
          d.jobs.edges.length === 0 ? (
            <Empty>No job has run on this node.</Empty>
          ) : (
            <>
              <JobTable jobs={d.jobs.edges.map((e) => e.node)} showTarget={false} busy={q.fetching} />
              {access.page('jobs') ? (
                <p>
                  <Link to={`/jobs?node=${encodeURIComponent(nodeId)}`}>
                    All jobs of this node{d.jobs.totalCount != null ? ` (${d.jobs.totalCount})` : ''}
                  </Link>
                </p>
              ) : null}
            </>
          )
        }
      </QueryView>
    </>
  );
}

function NodeActions({ node, onChanged }: { node: NodeDetail; onChanged(cursor: string): void }) {
  const access = useAccess();
  const [drain, drainSt] = useCommand(DrainNodeMutation);
  const [undrain, undrainSt] = useCommand(UndrainNodeMutation);
  const [decom, decomSt] = useCommand(DecommissionNodeMutation);
  const allowed = new Set(node.allowedActions);
  const problems = drainSt.problems ?? undrainSt.problems ?? decomSt.problems;
  return (
    <>
      {allowed.has('drain') && !node.cordoned && access.act('node.drain', 'drainNode') ? (
        <ConfirmButton
          label="Drain"
          title={`Drain ${node.hostname}?`}
          onConfirm={async () => {
            const r = await drain({ nodeId: node.id, reason: 'drained from the portal' });
            if (r) onChanged(r.drainNode.cursor);
          }}
        >
          The node takes no new work; jobs running on it finish.
        </ConfirmButton>
      ) : null}
      {allowed.has('undrain') && access.act('node.drain', 'undrainNode') ? (
        <button
          type="button"
          disabled={undrainSt.running}
          onClick={async () => {
            const r = await undrain({ nodeId: node.id });
            if (r) onChanged(r.undrainNode.cursor);
          }}
        >
          Undrain
        </button>
      ) : null}
      {allowed.has('decommission') && access.act('node.decommission', 'decommissionNode') ? (
        <ConfirmButton
          danger
          label="Decommission"
          title={`Decommission ${node.hostname}?`}
          onConfirm={async () => {
            const r = await decom({ nodeId: node.id, reason: 'decommissioned from the portal' });
            if (r) onChanged(r.decommissionNode.cursor);
          }}
        >
          The node is retired for good: its credential stops working and its id is never reused.
        </ConfirmButton>
      ) : null}
      {problems ? <Problems problems={problems} /> : null}
    </>
  );
}

function Facts({ facts, at }: { facts: NodeFacts | null; at: string | null }) {
  if (!facts) {
    return (
      <>
        <h2>Facts</h2>
        <Empty>The agent has not reported its hardware yet.</Empty>
      </>
    );
  }
  return (
    <>
      <h2>
        Facts <span className="muted small">reported <Time value={at} /></span>
      </h2>
      <dl className="facts">
        <dt>OS</dt>
        <dd>
          {facts.os.name} {facts.os.version} · kernel {facts.os.kernel} · {facts.os.arch}
        </dd>
        <dt>CPU</dt>
        <dd>
          {facts.cpu.model} · {facts.cpu.cores} cores, {facts.cpu.threads} threads
        </dd>
        <dt>Memory</dt>
        <dd>{formatBytes(facts.memoryBytes)}</dd>
        <dt>Disks</dt>
        <dd>
          {facts.disks.length === 0
            ? 'none'
            : facts.disks.map((d) => `${d.mountpoint} (${d.device}, ${d.filesystem}, ${formatBytes(d.sizeBytes)})`).join('; ')}
        </dd>
        <dt>Network</dt>
        <dd>
          {facts.network.length === 0
            ? 'none'
            : facts.network.map((n) => `${n.name} ${n.addresses.join(' ') || n.mac}`).join('; ')}
        </dd>
      </dl>
    </>
  );
}

const ranges: Record<string, number> = { '1h': 3600, '6h': 6 * 3600, '24h': 86400, '7d': 7 * 86400 };
const statSpec = { range: 'string' } as const;

function Statistics({ id }: { id: string }) {
  const [state, setState] = useUrlState(statSpec);
  const range = state.range in ranges ? state.range : '1h';
  // The window moves with time: the query is renewed every 30 s.
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const t = setInterval(() => setTick((n) => n + 1), 30000);
    return () => clearInterval(t);
  }, []);
  const from = useMemo(
    () => new Date(Date.now() - ranges[range]! * 1000).toISOString(),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [range, tick],
  );
  const q = useApiQuery(NodeStatsQuery, { id, range: { from }, maxPoints: 240 }, { key: `${id}/${range}` });
  const samples = q.data?.node?.statistics ?? [];
  const pts = (f: (s: (typeof samples)[number]) => number) => samples.map((s) => ({ t: Date.parse(s.time), v: f(s) }));
  return (
    <>
      <div className="page-head">
        <h2>Statistics</h2>
        <div className="segmented" role="group" aria-label="time range">
          {Object.keys(ranges).map((r) => (
            <button key={r} type="button" aria-pressed={r === range} onClick={() => setState({ range: r }, { replace: true })}>
              {r}
            </button>
          ))}
        </div>
      </div>
      {q.problems && !q.data ? <Problems problems={q.problems} /> : null}
      {!q.data && !q.problems ? <p className="state loading">Loading statistics…</p> : null}
      {q.data ? (
        <div className="charts">
          <LineChart title="CPU" ceiling={100} format={(v) => `${v.toFixed(0)} %`} series={[{ label: 'cpu', className: 'line-a', points: pts((s) => s.cpuPercent) }]} />
          <LineChart
            title="Memory used"
            format={formatBytes}
            tickUnit={1024 ** 3}
            series={[{ label: 'used', className: 'line-b', points: pts((s) => s.memoryUsedBytes) }]}
          />
          <LineChart
            title="Load"
            format={(v) => v.toFixed(2)}
            series={[
              { label: '1 min', className: 'line-a', points: pts((s) => s.load1) },
              { label: '5 min', className: 'line-b', points: pts((s) => s.load5) },
              { label: '15 min', className: 'line-c', points: pts((s) => s.load15) },
            ]}
          />
        </div>
      ) : null}
    </>
  );
}
