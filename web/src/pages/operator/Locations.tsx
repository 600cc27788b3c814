import { useState, type FormEvent } from 'react';
import { CreateLocationMutation, LocationsQuery, RetireLocationMutation } from '../../api/ops';
import type { CapacityTotals } from '../../api/ops';
import type { Location, LocationStatus } from '../../api/types';
import { useAccess } from '../../app/access';
import { useApiQuery, useCommand } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { useUrlState } from '../../app/useUrlState';
import { Checks } from '../../components/Checks';
import { CreatePanel } from '../../components/CreatePanel';
import { Meter } from '../../components/Capacity';
import { ConfirmButton } from '../../components/Confirm';
import { Field } from '../../components/Field';
import { Link } from '../../components/Link';
import { ListTable } from '../../components/ListTable';
import { Status } from '../../components/Status';
import { Problems, QueryView } from '../../components/states';
import { Time } from '../../components/Time';

const spec = { status: 'list' } as const;
const statuses: LocationStatus[] = ['ACTIVE', 'RETIRED'];

export function LocationsPage() {
  useTitle('Locations');
  const access = useAccess();
  const [state, setState] = useUrlState(spec);
  const [cw, setCw] = useState<string>();
  // Pages of 100: a location's capacity reads its nodes.
  const q = useApiQuery(LocationsQuery, {
    first: 100,
    filter: { status: state.status.length ? (state.status as LocationStatus[]) : undefined },
    consistentWith: cw,
  });
  return (
    <section>
      <h1>Locations</h1>
      {access.act('location.create', 'createLocation') ? <CreateLocation onCreated={setCw} /> : null}
      <form className="filters" role="search" aria-label="filter locations" onSubmit={(e) => e.preventDefault()}>
        <Checks legend="Status" options={statuses} value={state.status} onChange={(v) => setState({ status: v })} />
      </form>
      <QueryView {...q} what="Loading locations">
        {(d) => (
          <ListTable
            busy={q.fetching}
            columns={[
              { header: 'Name' },
              { header: 'Description' },
              { header: 'Status' },
              { header: 'CPU allocated' },
              { header: 'Memory allocated' },
              { header: 'Nodes', srOnly: true, hidden: !access.page('nodes') },
              { header: 'Created' },
            ]}
            rows={d.locations.edges.length}
            empty={state.status.length ? 'No location matches this filter.' : 'There is no location yet.'}
          >
            {d.locations.edges.map(({ node: l }) => (
              <LocationRow key={l.id} location={l} showNodes={access.page('nodes')} onChanged={setCw} />
            ))}
          </ListTable>
        )}
      </QueryView>
    </section>
  );
}

function LocationRow({
  location: l,
  showNodes,
  onChanged,
}: {
  location: Location & { capacity: CapacityTotals };
  showNodes: boolean;
  onChanged(c: string): void;
}) {
  const access = useAccess();
  const [retire, st] = useCommand(RetireLocationMutation);
  return (
    <tr>
      <td>
        <Link to={`/locations/${encodeURIComponent(l.id)}`}>{l.name}</Link> <code className="muted">{l.id}</code>
      </td>
      <td>{l.description ?? <span className="muted">—</span>}</td>
      <td>
        <Status value={l.status} />
      </td>
      <td>
        <Meter kind="cpu" allocated={l.capacity.allocated} allocatable={l.capacity.allocatable} />
      </td>
      <td>
        <Meter kind="memory" allocated={l.capacity.allocated} allocatable={l.capacity.allocatable} />
      </td>
      {showNodes ? (
        <td>
          <Link to={`/nodes?location=${encodeURIComponent(l.id)}`}>{`${l.capacity.nodes} nodes`}</Link>
        </td>
      ) : null}
      <td>
        <Time value={l.createdAt} />
      </td>
      <td className="row-actions">
        {l.status === 'ACTIVE' && access.act('location.update', 'retireLocation') ? (
          <ConfirmButton
            label="Retire"
            title={`Retire ${l.name}?`}
            onConfirm={async () => {
              const r = await retire({ locationId: l.id });
              if (r) onChanged(r.retireLocation.cursor);
            }}
          >
            It takes no new nodes or services; what is there stays.
          </ConfirmButton>
        ) : null}
        {st.problems ? <Problems problems={st.problems} /> : null}
      </td>
    </tr>
  );
}

function CreateLocation({ onCreated }: { onCreated(c: string): void }) {
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [error, setError] = useState<string>();
  const [create, st] = useCommand(CreateLocationMutation);
  async function submit(e: FormEvent) {
    e.preventDefault();
    if (name.trim() === '') {
      setError('Give the location a name.');
      return;
    }
    setError(undefined);
    const r = await create({ name: name.trim(), description: description.trim() || undefined });
    if (r) {
      setName('');
      setDescription('');
      onCreated(r.createLocation.cursor);
    }
  }
  return (
    <CreatePanel summary="New location…" label="new location" submit="Create location" running={st.running} problems={st.problems} onSubmit={submit}>
      <Field id="location-name" label="Name" error={error} required>
        {(a) => <input {...a} value={name} onChange={(e) => setName(e.target.value)} />}
      </Field>
      <Field id="location-description" label="Description">
        {(a) => <input {...a} value={description} onChange={(e) => setDescription(e.target.value)} />}
      </Field>
    </CreatePanel>
  );
}
