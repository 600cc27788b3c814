import { useState, type FormEvent } from 'react';
import { CreateTenantMutation, ResumeTenantMutation, SuspendTenantMutation, TenantsQuery } from '../../api/ops';
import type { Tenant, TenantStatus } from '../../api/types';
import { useAccess } from '../../app/access';
import { useApiQuery, useCommand } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { useUrlState } from '../../app/useUrlState';
import { Checks } from '../../components/Checks';
import { CreatePanel } from '../../components/CreatePanel';
import { ConfirmButton } from '../../components/Confirm';
import { Field } from '../../components/Field';
import { Link } from '../../components/Link';
import { ListTable, type Column } from '../../components/ListTable';
import { Pager } from '../../components/Pager';
import { SearchBox } from '../../components/SearchBox';
import { Status } from '../../components/Status';
import { Problems, QueryView } from '../../components/states';
import { Time } from '../../components/Time';

const spec = { name: 'string', status: 'list', after: 'string' } as const;
const statuses: TenantStatus[] = ['ACTIVE', 'SUSPENDED'];
const columns: Column[] = [{ header: 'Name' }, { header: 'Id' }, { header: 'Status' }, { header: 'Created' }];

export function TenantsPage() {
  useTitle('Tenants');
  const access = useAccess();
  const [state, setState] = useUrlState(spec);
  const [cw, setCw] = useState<string>();
  const filter = { name: state.name || undefined, status: state.status.length ? (state.status as TenantStatus[]) : undefined };
  const q = useApiQuery(TenantsQuery, { first: 50, after: state.after || null, filter, consistentWith: cw });
  return (
    <section>
      <div className="page-head">
        <h1>Tenants</h1>
      </div>
      {access.act('tenant.create', 'createTenant') ? <CreateTenant onCreated={setCw} /> : null}
      <form className="filters" role="search" aria-label="filter tenants" onSubmit={(e) => e.preventDefault()}>
        <SearchBox id="tenant-name" label="Name" value={state.name} onApply={(v) => setState({ name: v, after: '' })} />
        <Checks legend="Status" options={statuses} value={state.status} onChange={(v) => setState({ status: v, after: '' })} />
      </form>
      <QueryView {...q} what="Loading tenants">
        {(d) => (
          <>
            <ListTable
              busy={q.fetching}
              columns={columns}
              rows={d.tenants.edges.length}
              empty={state.name || state.status.length ? 'No tenant matches these filters.' : 'There is no tenant yet.'}
            >
              {d.tenants.edges.map(({ node: t }) => (
                <TenantRow key={t.id} tenant={t} onChanged={setCw} />
              ))}
            </ListTable>
            {d.tenants.edges.length > 0 ? (
              <Pager
                pageInfo={d.tenants.pageInfo}
                atStart={!state.after}
                shown={d.tenants.edges.length}
                total={d.tenants.totalCount}
                onFirst={() => setState({ after: '' })}
                onNext={(c) => setState({ after: c })}
              />
            ) : null}
          </>
        )}
      </QueryView>
    </section>
  );
}

function TenantRow({ tenant: t, onChanged }: { tenant: Tenant; onChanged(c: string): void }) {
  const access = useAccess();
  const [suspend, sSt] = useCommand(SuspendTenantMutation);
  const [resume, rSt] = useCommand(ResumeTenantMutation);
  const [reason, setReason] = useState('');
  const problems = sSt.problems ?? rSt.problems;
  return (
    <tr>
      <td>{t.name}</td>
      <td>
        <code>{t.id}</code>
      </td>
      <td>
        <Status value={t.status} />
        {t.suspendReason ? <span className="muted"> — {t.suspendReason}</span> : null}
      </td>
      <td>
        <Time value={t.createdAt} />
      </td>
      <td className="row-actions">
        {access.page('services') ? <Link to={`/services?tenant=${encodeURIComponent(t.id)}`}>Services</Link> : null}
        {access.page('users') ? <Link to={`/users?tenant=${encodeURIComponent(t.id)}`}>Users</Link> : null}
        {t.status === 'ACTIVE' && access.act('tenant.update', 'suspendTenant') ? (
          <ConfirmButton
            label="Suspend"
            title={`Suspend ${t.name}?`}
            onConfirm={async () => {
              const r = await suspend({ tenantId: t.id, reason: reason || undefined });
              if (r) onChanged(r.suspendTenant.cursor);
            }}
          >
            <p>Its users may not act until the tenant is resumed; its services keep running.</p>
            <Field id={`suspend-${t.id}`} label="Reason">
              {(a) => <input {...a} value={reason} onChange={(e) => setReason(e.target.value)} />}
            </Field>
          </ConfirmButton>
        ) : null}
        {t.status === 'SUSPENDED' && access.act('tenant.update', 'resumeTenant') ? (
          <button
            type="button"
            onClick={async () => {
              const r = await resume({ tenantId: t.id });
              if (r) onChanged(r.resumeTenant.cursor);
            }}
          >
            Resume
          </button>
        ) : null}
        {problems ? <Problems problems={problems} /> : null}
      </td>
    </tr>
  );
}

function CreateTenant({ onCreated }: { onCreated(c: string): void }) {
  const [name, setName] = useState('');
  const [id, setId] = useState('');
  const [error, setError] = useState<string>();
  const [create, st] = useCommand(CreateTenantMutation);
  async function submit(e: FormEvent) {
    e.preventDefault();
    if (name.trim() === '') {
      setError('Give the tenant a name.');
      return;
    }
    setError(undefined);
    const r = await create({ name: name.trim(), id: id.trim() || undefined });
    if (r) {
      setName('');
      setId('');
      onCreated(r.createTenant.cursor);
    }
  }
  return (
    <CreatePanel summary="New tenant…" label="new tenant" submit="Create tenant" running={st.running} problems={st.problems} onSubmit={submit}>
      <Field id="tenant-new-name" label="Name" error={error} required>
        {(a) => <input {...a} value={name} onChange={(e) => setName(e.target.value)} />}
      </Field>
      <Field id="tenant-new-id" label="Id" hint="Optional: lower-case letters, digits, dashes">
        {(a) => <input {...a} value={id} onChange={(e) => setId(e.target.value)} />}
      </Field>
    </CreatePanel>
  );
}
