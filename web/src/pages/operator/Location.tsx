import { useState, type FormEvent } from 'react';
import { LocationQuery, SetLocationReserveMutation } from '../../api/ops';
import type { Resources } from '../../api/types';
import { useAccess } from '../../app/access';
import { useApiQuery, useCommand } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { FillChart, Meter } from '../../components/Capacity';
import { CreatePanel } from '../../components/CreatePanel';
import { Field } from '../../components/Field';
import { Link } from '../../components/Link';
import { ListTable } from '../../components/ListTable';
import { Status } from '../../components/Status';
import { QueryView } from '../../components/states';
import { Time } from '../../components/Time';
import { formatBytes } from '../../lib/format';

/** One location: its capacity, its nodes by fill, what runs there. */
export function LocationPage({ params }: { params: Record<string, string> }) {
  const id = params.id ?? '';
  const [cw, setCw] = useState<string>();
  const q = useApiQuery(LocationQuery, { id, consistentWith: cw });
  useTitle(q.data?.location?.name ?? 'Location');
  const access = useAccess();
  return (
    <section>
      <p className="crumbs">
        <Link to="/locations">Locations</Link>
      </p>
      <QueryView {...q} what="Loading the location">
        {(d) => {
          const l = d.location;
          if (!l) return <p className="state empty">There is no location {id}.</p>;
          const c = l.capacity;
          return (
            <>
              <h1>
                {l.name} <Status value={l.status} />
              </h1>
              {l.description ? <p>{l.description}</p> : null}
              {l.status === 'RETIRED' ? (
                <p className="notice warn">This location is retired: it takes no new nodes, services or placements. What still runs here is listed below.</p>
              ) : null}
              <dl className="totals" aria-label="capacity">
                <dt>Nodes</dt>
                <dd>
                  {c.nodes} ({c.schedulableNodes} taking work)
                </dd>
                <dt>CPU</dt>
                <dd>
                  <Meter kind="cpu" allocated={c.allocated} allocatable={c.allocatable} />
                </dd>
                <dt>Memory</dt>
                <dd>
                  <Meter kind="memory" allocated={c.allocated} allocatable={c.allocatable} />
                </dd>
                <dt>Disk</dt>
                <dd>
                  <Meter kind="disk" allocated={c.allocated} allocatable={c.allocatable} />
                </dd>
                <dt>Reserve per node</dt>
                <dd>{reserveText(c.reserve)}</dd>
              </dl>
              {access.act('location.update', 'setLocationReserve') ? <ReserveForm locationId={l.id} current={c.reserve} onSet={setCw} /> : null}
              <FillChart
                title={c.fullest.length < c.nodes ? `The ${c.fullest.length} fullest of ${c.nodes} nodes` : 'Nodes by fill'}
                nodes={c.fullest.map((f) => ({ nodeId: f.nodeId, hostname: f.hostname, status: f.status, fill: f.capacity.fill }))}
              />
              <h2>
                Running here <span className="muted">({c.runningTotal})</span>
              </h2>
              <ListTable
                columns={[{ header: 'Service' }, { header: 'Resource' }, { header: 'Node' }, { header: 'Asks' }, { header: 'Allocated' }]}
                rows={c.running.length}
                empty="Nothing is allocated in this location."
              >
                {c.running.map((a) => (
                  <tr key={a.resourceId}>
                    <td>{a.serviceId ? <Link to={`/services/${encodeURIComponent(a.serviceId)}`}>{a.serviceName ?? a.serviceId}</Link> : '—'}</td>
                    <td>
                      {a.resourceType} <code className="muted" title={a.resourceId}>{a.resourceId.slice(0, 8)}</code>
                    </td>
                    <td>
                      <Link to={`/nodes/${encodeURIComponent(a.nodeId)}`}>{a.hostname}</Link>
                    </td>
                    <td>{reserveText(a.request)}</td>
                    <td>
                      <Time value={a.allocatedAt} />
                    </td>
                  </tr>
                ))}
              </ListTable>
              {c.runningTotal > c.running.length ? (
                <p className="muted">
                  The newest {c.running.length} of {c.runningTotal} are shown.
                </p>
              ) : null}
            </>
          );
        }}
      </QueryView>
    </section>
  );
}

function reserveText(r: Resources): string {
  const parts = [];
  if (r.cpu > 0) parts.push(`${r.cpu} CPU`);
  if (r.memoryBytes > 0) parts.push(`${formatBytes(r.memoryBytes)} memory`);
  if (r.diskBytes > 0) parts.push(`${formatBytes(r.diskBytes)} disk`);
  return parts.length ? parts.join(', ') : 'none';
}

const gib = 2 ** 30;

function ReserveForm({ locationId, current, onSet }: { locationId: string; current: Resources; onSet(c: string): void }) {
  const [cpu, setCpu] = useState(String(current.cpu));
  const [mem, setMem] = useState(String(current.memoryBytes / gib));
  const [disk, setDisk] = useState(String(current.diskBytes / gib));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [set, st] = useCommand(SetLocationReserveMutation);
  async function submit(e: FormEvent) {
    e.preventDefault();
    const errs: Record<string, string> = {};
    const n = (v: string, k: string) => {
      const x = Number(v || '0');
      if (!Number.isFinite(x) || x < 0) errs[k] = 'A number, 0 or more.';
      return x;
    };
    const reserve = { cpu: n(cpu, 'cpu'), memoryBytes: Math.round(n(mem, 'mem') * gib), diskBytes: Math.round(n(disk, 'disk') * gib) };
    setErrors(errs);
    if (Object.keys(errs).length) return;
    const r = await set({ locationId, reserve });
    if (r) onSet(r.setLocationReserve.cursor);
  }
  return (
    <CreatePanel summary="Reserve per node…" label="reserve per node" submit="Set reserve" running={st.running} problems={st.problems} onSubmit={submit}>
      <p className="muted">What the scheduler leaves to the system on each node of the location that sets no reserve of its own.</p>
      <Field id="reserve-cpu" label="CPU" error={errors.cpu}>
        {(a) => <input {...a} type="number" min={0} step="0.1" value={cpu} onChange={(e) => setCpu(e.target.value)} />}
      </Field>
      <Field id="reserve-memory" label="Memory (GiB)" error={errors.mem}>
        {(a) => <input {...a} type="number" min={0} step="0.5" value={mem} onChange={(e) => setMem(e.target.value)} />}
      </Field>
      <Field id="reserve-disk" label="Disk (GiB)" error={errors.disk}>
        {(a) => <input {...a} type="number" min={0} step="1" value={disk} onChange={(e) => setDisk(e.target.value)} />}
      </Field>
    </CreatePanel>
  );
}
