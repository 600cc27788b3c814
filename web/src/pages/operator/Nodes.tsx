import { useState } from 'react';
import { CreateJoinTokenMutation, NodeChangedSubscription, NodesQuery } from '../../api/ops';
import { LocationSelect } from '../../components/LocationSelect';
import { nodeStatuses, type NodeStatus, type NodeSummary } from '../../api/types';
import { useAccess } from '../../app/access';
import { useApiQuery, useCommand, useLiveAnswer } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { useLocationNames } from '../../app/useLocationNames';
import { useUrlState } from '../../app/useUrlState';
import { Checks } from '../../components/Checks';
import { Field } from '../../components/Field';
import { Labels } from '../../components/Labels';
import { Link } from '../../components/Link';
import { Pager } from '../../components/Pager';
import { SearchBox } from '../../components/SearchBox';
import { ShownOnce } from '../../components/Secret';
import { Status } from '../../components/Status';
import { Empty, Problems, QueryView } from '../../components/states';
import { Time } from '../../components/Time';
import { parseLabels } from '../../lib/urlState';

const spec = { q: 'string', status: 'list', label: 'string', location: 'string', after: 'string' } as const;

export function NodesPage() {
  useTitle('Nodes');
  const access = useAccess();
  const [state, setState] = useUrlState(spec);
  const labels = parseLabels(state.label);
  const filter = {
    hostname: state.q || undefined,
    status: state.status.length ? (state.status as NodeStatus[]) : undefined,
    labels: labels.labels.length ? labels.labels : undefined,
    locationId: state.location || undefined,
  };
  const q = useApiQuery(NodesQuery, { first: 50, after: state.after || null, filter });
  const [announce, setAnnounce] = useState('');
  useLiveAnswer(q, NodeChangedSubscription, {}, {
    live: access.live('nodeChanged'),
    debounceMs: 300,
    onChange: (d) => {
      const n = d.nodeChanged.node;
      if (n) setAnnounce(`${n.hostname} is ${n.status.toLowerCase()}`);
    },
  });

  return (
    <section>
      <div className="page-head">
        <h1>Nodes</h1>
        {access.act('node.join_token', 'createJoinToken') ? <EnrollNode /> : null}
      </div>
      <p className="sr-only" aria-live="polite">
        {announce}
      </p>
      <form className="filters" role="search" aria-label="filter nodes" onSubmit={(e) => e.preventDefault()}>
        <SearchBox id="node-q" label="Hostname" value={state.q} onApply={(v) => setState({ q: v, after: '' })} />
        <SearchBox
          id="node-labels"
          label="Labels"
          placeholder="zone=a, role=db"
          value={state.label}
          error={labels.error}
          onApply={(v) => setState({ label: v, after: '' })}
        />
        {access.query('locations') ? <LocationSelect value={state.location} onChange={(v) => setState({ location: v, after: '' })} /> : null}
        <Checks legend="Status" options={nodeStatuses} value={state.status} onChange={(v) => setState({ status: v, after: '' })} />
      </form>
      <QueryView {...q} what="Loading nodes">
        {(d) =>
          d.nodes.edges.length === 0 ? (
            <Empty>
              {state.q || state.status.length || state.label || state.location
                ? 'No node matches these filters.'
                : 'No node has enrolled yet. Issue a join token and start an agent with it.'}
            </Empty>
          ) : (
            <>
              <NodeTable nodes={d.nodes.edges.map((e) => e.node)} busy={q.fetching} />
              <Pager
                pageInfo={d.nodes.pageInfo}
                atStart={!state.after}
                shown={d.nodes.edges.length}
                total={d.nodes.totalCount}
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

function lastSeen(n: NodeSummary): string | null {
  if (n.status === 'ONLINE' || n.status === 'DRAINING' || n.status === 'DRAINED') return null;
  return n.disconnectedAt ?? n.connectedAt;
}

function NodeTable({ nodes, busy }: { nodes: NodeSummary[]; busy: boolean }) {
  const locations = useLocationNames();
  return (
    <table aria-busy={busy} data-testid="nodes">
      <thead>
        <tr>
          <th scope="col">Hostname</th>
          <th scope="col">Status</th>
          <th scope="col">Location</th>
          <th scope="col">Labels</th>
          <th scope="col">Last seen</th>
        </tr>
      </thead>
      <tbody>
        {nodes.map((n) => {
          const seen = lastSeen(n);
          return (
            <tr key={n.id} data-node={n.hostname}>
              <td>
                <Link to={`/nodes/${encodeURIComponent(n.id)}`}>{n.hostname}</Link>
                {n.cordoned ? <span className="muted"> (cordoned)</span> : null}
              </td>
              <td>
                <Status value={n.status} />
              </td>
              <td>{n.locationId ? (locations.get(n.locationId) ?? n.locationId) : <span className="muted">none</span>}</td>
              <td>
                <Labels labels={n.labels} />
              </td>
              <td>{seen ? <Time value={seen} /> : n.status === 'ENROLLED' ? <span className="muted">never</span> : 'connected'}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function EnrollNode() {
  const access = useAccess();
  const [open, setOpen] = useState(false);
  const [location, setLocation] = useState('');
  const [labelText, setLabelText] = useState('');
  const [ttl, setTtl] = useState('900');
  const [run, st, reset] = useCommand(CreateJoinTokenMutation);
  const [secret, setSecret] = useState<string>();
  const labels = parseLabels(labelText);
  if (secret) {
    return (
      <ShownOnce
        label="Join token issued. Start the agent with it (cairn-agent --join-token …); it works once, before it expires."
        secret={secret}
        onDone={() => {
          setSecret(undefined);
          setOpen(false);
        }}
      />
    );
  }
  if (!open) {
    return (
      <button type="button" onClick={() => setOpen(true)}>
        Enroll a node…
      </button>
    );
  }
  return (
    <form
      className="panel"
      aria-label="issue a join token"
      onSubmit={async (e) => {
        e.preventDefault();
        if (labels.error) return;
        const r = await run({
          locationId: location || undefined,
          labels: labels.labels,
          ttlSeconds: Number(ttl) || undefined,
        });
        if (r) setSecret(r.createJoinToken.token);
      }}
    >
      <h2>Issue a join token</h2>
      {access.query('locations') ? <LocationSelect id="join-location" label="Location" empty="none" value={location} onChange={setLocation} /> : null}
      <Field id="join-labels" label="Labels" hint="key=value, comma separated" error={labels.error}>
        {(a) => <input {...a} value={labelText} onChange={(e) => setLabelText(e.target.value)} />}
      </Field>
      <Field id="join-ttl" label="Valid for (seconds)" hint="At most 86400">
        {(a) => <input {...a} type="number" min={60} max={86400} value={ttl} onChange={(e) => setTtl(e.target.value)} />}
      </Field>
      {st.problems ? <Problems problems={st.problems} /> : null}
      <div className="actions">
        <button
          type="button"
          onClick={() => {
            reset();
            setOpen(false);
          }}
        >
          Cancel
        </button>
        <button type="submit" className="primary" disabled={st.running}>
          Issue token
        </button>
      </div>
    </form>
  );
}
