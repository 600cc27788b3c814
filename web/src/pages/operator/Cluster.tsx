import { useEffect } from 'react';
import { ClusterQuery } from '../../api/ops';
import type { Replica } from '../../api/types';
import { useApiQuery } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { ListTable } from '../../components/ListTable';
import { Status } from '../../components/Status';
import { QueryView } from '../../components/states';
import { Time } from '../../components/Time';

// Replicas announce themselves every 2 s; the page looks again every 5 s.
const refreshMs = 5000;

/** The cairnd replicas serving the database, and who owns which work. */
export function ClusterPage() {
  useTitle('Cluster');
  const q = useApiQuery(ClusterQuery, {});
  const { refetch } = q;
  useEffect(() => {
    const t = setInterval(refetch, refreshMs);
    return () => clearInterval(t);
  }, [refetch]);
  return (
    <section>
      <h1>Cluster</h1>
      <p className="muted">
        The cairnd replicas sharing this database. Work that must happen once (dispatch: leases, liveness, retries and
        schedules; the orchestrator) has one owner at a time; another replica takes it over about 6 s after its owner
        stops.
      </p>
      <QueryView {...q} what="Loading the replicas">
        {(d) => (
          <ListTable
            label="replicas"
            actions={false}
            busy={q.fetching}
            columns={[{ header: 'Replica' }, { header: 'Address' }, { header: 'Version' }, { header: 'State' }, { header: 'Owns' }, { header: 'Started' }, { header: 'Last seen' }]}
            rows={d.cluster.replicas.length}
            empty="No replica has announced itself yet."
          >
            {d.cluster.replicas.map((r) => (
              <ReplicaRow key={r.id} replica={r} />
            ))}
          </ListTable>
        )}
      </QueryView>
    </section>
  );
}

function ReplicaRow({ replica: r }: { replica: Replica }) {
  return (
    <tr data-testid="replica">
      <td>
        <code>{r.id}</code>
        {r.self ? <span className="muted"> (answering this page)</span> : null}
      </td>
      <td>{r.address}</td>
      <td>{r.version}</td>
      <td>
        <Status value={r.gone ? 'GONE' : 'UP'} />
      </td>
      <td>{r.owns.length ? r.owns.join(', ') : <span className="muted">—</span>}</td>
      <td>
        <Time value={r.startedAt} />
      </td>
      <td>
        <Time value={r.lastSeen} />
      </td>
    </tr>
  );
}
