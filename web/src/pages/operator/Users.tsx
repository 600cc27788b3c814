import { useState, type FormEvent } from 'react';
import {
  ApiTokensQuery,
  CreateApiTokenMutation,
  CreateUserMutation,
  DisableUserMutation,
  EnableUserMutation,
  RevokeApiTokenMutation,
  UsersQuery,
} from '../../api/ops';
import type { ApiToken, Role, User } from '../../api/types';
import { useAccess } from '../../app/access';
import { useSession } from '../../app/context';
import { useApiQuery, useCommand } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { useUrlState } from '../../app/useUrlState';
import { ConfirmButton } from '../../components/Confirm';
import { CreatePanel } from '../../components/CreatePanel';
import { Field } from '../../components/Field';
import { ListTable, type Column } from '../../components/ListTable';
import { Pager } from '../../components/Pager';
import { SearchBox } from '../../components/SearchBox';
import { ShownOnce } from '../../components/Secret';
import { Status } from '../../components/Status';
import { Problems, QueryView } from '../../components/states';
import { Time } from '../../components/Time';
import { isTenantRole, readsTokens, roleNames } from '../../lib/roles';

const spec = { tenant: 'string', user: 'string', revoked: 'bool', after: 'string' } as const;
const userColumns: Column[] = [{ header: 'Name' }, { header: 'Role' }, { header: 'Tenant' }, { header: 'Status' }, { header: 'Created' }];
const tokenColumns: Column[] = [
  { header: 'Token' },
  { header: 'User' },
  { header: 'Role' },
  { header: 'Status' },
  { header: 'Expires' },
  { header: 'Issued' },
];
const assignable: Role[] = ['ADMIN', 'OPERATOR', 'TENANT_ADMIN', 'TENANT_MEMBER', 'VENDOR', 'AUDITOR'];

export function UsersPage() {
  const { viewer } = useSession();
  const access = useAccess();
  useTitle(readsTokens(viewer.role) && access.query('apiTokens') ? 'Users and tokens' : 'Users');
  const [state, setState] = useUrlState(spec);
  // Tenant administrators see their own tenant only, whatever the address says.
  const tenant = isTenantRole(viewer.role) ? (viewer.tenantId ?? '') : state.tenant;
  const [cw, setCw] = useState<string>();
  const users = useApiQuery(UsersQuery, { first: 100, after: state.after || null, filter: { tenantId: tenant || undefined }, consistentWith: cw });
  return (
    <section>
      <h1>{readsTokens(viewer.role) && access.query('apiTokens') ? 'Users and tokens' : 'Users'}</h1>
      {access.act('user.create', 'createUser') ? <CreateUser tenant={tenant} onCreated={setCw} /> : null}
      {!isTenantRole(viewer.role) ? (
        <form className="filters" role="search" aria-label="filter users" onSubmit={(e) => e.preventDefault()}>
          <SearchBox id="users-tenant" label="Tenant id" value={state.tenant} onApply={(v) => setState({ tenant: v, after: '', user: '' })} />
        </form>
      ) : null}
      <h2>Users</h2>
      <QueryView {...users} what="Loading users">
        {(d) => (
          <>
            <ListTable
              busy={users.fetching}
              columns={userColumns}
              rows={d.users.edges.length}
              empty={tenant ? 'This tenant has no user yet.' : 'There is no user yet.'}
            >
              {d.users.edges.map(({ node: u }) => (
                <UserRow
                  key={u.id}
                  user={u}
                  selected={state.user === u.id}
                  onSelect={readsTokens(viewer.role) && access.query('apiTokens') ? () => setState({ user: u.id }) : undefined}
                  onChanged={setCw}
                />
              ))}
            </ListTable>
            {d.users.edges.length > 0 ? (
              <Pager
                pageInfo={d.users.pageInfo}
                atStart={!state.after}
                shown={d.users.edges.length}
                total={d.users.totalCount}
                onFirst={() => setState({ after: '' })}
                onNext={(c) => setState({ after: c })}
              />
            ) : null}
          </>
        )}
      </QueryView>
      {readsTokens(viewer.role) && access.query('apiTokens') ? (
        <Tokens userId={state.user} tenant={tenant} revoked={state.revoked} onRevoked={(v) => setState({ revoked: v }, { replace: true })} />
      ) : null}
    </section>
  );
}

function UserRow({
  user: u,
  selected,
  onSelect,
  onChanged,
}: {
  user: User;
  selected: boolean;
  onSelect?: () => void;
  onChanged(c: string): void;
}) {
  const { viewer } = useSession();
  const access = useAccess();
  const [disable, dSt] = useCommand(DisableUserMutation);
  const [enable, eSt] = useCommand(EnableUserMutation);
  const problems = dSt.problems ?? eSt.problems;
  return (
    <tr aria-selected={selected} className={selected ? 'selected' : undefined}>
      <td>{u.name}</td>
      <td>{roleNames[u.role]}</td>
      <td>{u.tenantId ?? <span className="muted">—</span>}</td>
      <td>
        <Status value={u.status} />
      </td>
      <td>
        <Time value={u.createdAt} />
      </td>
      <td className="row-actions">
        {onSelect ? (
          <button type="button" onClick={onSelect} aria-pressed={selected}>
            Tokens
          </button>
        ) : null}
        {u.status === 'ACTIVE' && access.act('user.update', 'disableUser') && u.id !== viewer.userId ? (
          <ConfirmButton
            danger
            label="Disable"
            title={`Disable ${u.name}?`}
            onConfirm={async () => {
              const r = await disable({ userId: u.id });
              if (r) onChanged(r.disableUser.cursor);
            }}
          >
            The user may not act, and every token of theirs stops working.
          </ConfirmButton>
        ) : null}
        {u.status === 'DISABLED' && access.act('user.update', 'enableUser') ? (
          <button
            type="button"
            onClick={async () => {
              const r = await enable({ userId: u.id });
              if (r) onChanged(r.enableUser.cursor);
            }}
          >
            Enable
          </button>
        ) : null}
        {problems ? <Problems problems={problems} /> : null}
      </td>
    </tr>
  );
}

function CreateUser({ tenant, onCreated }: { tenant: string; onCreated(c: string): void }) {
  const { viewer } = useSession();
  const tenantBound = isTenantRole(viewer.role);
  // Nobody hands out more than they hold; only an administrator makes administrators.
  const roles = tenantBound ? (['TENANT_ADMIN', 'TENANT_MEMBER'] as Role[]) : viewer.role === 'ADMIN' ? assignable : assignable.filter((r) => r !== 'ADMIN');
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>(roles[roles.length - 1]!);
  const [tenantId, setTenantId] = useState(tenant);
  const [errors, setErrors] = useState<{ name?: string; tenantId?: string }>({});
  const [create, st] = useCommand(CreateUserMutation);
  async function submit(e: FormEvent) {
    e.preventDefault();
    const errs: typeof errors = {};
    if (name.trim() === '') errs.name = 'Give the user a name.';
    const t = tenantBound ? (viewer.tenantId ?? '') : tenantId.trim();
    if (isTenantRole(role) && t === '') errs.tenantId = 'A tenant role needs the tenant.';
    setErrors(errs);
    if (Object.keys(errs).length) return;
    const r = await create({ name: name.trim(), role, tenantId: isTenantRole(role) ? t : undefined });
    if (r) {
      setName('');
      onCreated(r.createUser.cursor);
    }
  }
  return (
    <CreatePanel summary="New user…" label="new user" submit="Create user" running={st.running} problems={st.problems} onSubmit={submit}>
      <Field id="user-name" label="Name" error={errors.name} required>
        {(a) => <input {...a} value={name} onChange={(e) => setName(e.target.value)} />}
      </Field>
      <Field id="user-role" label="Role" required>
        {(a) => (
          <select {...a} value={role} onChange={(e) => setRole(e.target.value as Role)}>
            {roles.map((r) => (
              <option key={r} value={r}>
                {roleNames[r]}
              </option>
            ))}
          </select>
        )}
      </Field>
      {!tenantBound && isTenantRole(role) ? (
        <Field id="user-tenant" label="Tenant id" error={errors.tenantId} required>
          {(a) => <input {...a} value={tenantId} onChange={(e) => setTenantId(e.target.value)} />}
        </Field>
      ) : null}
    </CreatePanel>
  );
}

function Tokens({ userId, tenant, revoked, onRevoked }: { userId: string; tenant: string; revoked: boolean; onRevoked(v: boolean): void }) {
  const access = useAccess();
  const [cw, setCw] = useState<string>();
  const q = useApiQuery(ApiTokensQuery, {
    first: 100,
    filter: { userId: userId || undefined, tenantId: tenant || undefined, includeRevoked: revoked },
    consistentWith: cw,
  });
  return (
    <>
      <div className="page-head">
        <h2>API tokens{userId ? ` of ${userId}` : ''}</h2>
        <label>
          <input type="checkbox" checked={revoked} onChange={(e) => onRevoked(e.target.checked)} /> Show revoked
        </label>
      </div>
      {access.act('token.issue', 'createApiToken') ? <CreateToken userId={userId} onCreated={setCw} /> : null}
      <QueryView {...q} what="Loading tokens">
        {(d) => (
          <ListTable busy={q.fetching} columns={tokenColumns} rows={d.apiTokens.edges.length} empty="No token.">
            {d.apiTokens.edges.map(({ node: t }) => (
              <TokenRow key={t.id} token={t} onChanged={setCw} />
            ))}
          </ListTable>
        )}
      </QueryView>
    </>
  );
}

function TokenRow({ token: t, onChanged }: { token: ApiToken; onChanged(c: string): void }) {
  const access = useAccess();
  const [revoke, st] = useCommand(RevokeApiTokenMutation);
  return (
    <tr>
      <td>
        <code>{t.id}</code>
      </td>
      <td>{t.userId}</td>
      <td>{roleNames[t.role]}</td>
      <td>
        <Status value={t.status} />
      </td>
      <td>
        <Time value={t.expiresAt} />
      </td>
      <td>
        <Time value={t.issuedAt} />
      </td>
      <td className="row-actions">
        {t.status === 'ACTIVE' && access.act('token.revoke', 'revokeApiToken') ? (
          <ConfirmButton
            danger
            label="Revoke"
            title="Revoke this token?"
            onConfirm={async () => {
              const r = await revoke({ tokenId: t.id, reason: 'revoked from the portal' });
              if (r) onChanged(r.revokeApiToken.cursor);
            }}
          >
            Requests with it are refused from now on, and its open connections are closed.
          </ConfirmButton>
        ) : null}
        {st.problems ? <Problems problems={st.problems} /> : null}
      </td>
    </tr>
  );
}

function CreateToken({ userId, onCreated }: { userId: string; onCreated(c: string): void }) {
  const [days, setDays] = useState('30');
  const [error, setError] = useState<string>();
  const [secret, setSecret] = useState<string>();
  const [create, st] = useCommand(CreateApiTokenMutation);
  async function submit(e: FormEvent) {
    e.preventDefault();
    const d = Number(days);
    if (!Number.isFinite(d) || d <= 0) {
      setError('A number of days, more than 0.');
      return;
    }
    setError(undefined);
    const r = await create({ userId: userId || undefined, ttlSeconds: Math.round(d * 86400) });
    if (r) {
      setSecret(r.createApiToken.token);
      onCreated(r.createApiToken.cursor);
    }
  }
  if (secret) return <ShownOnce label="Token created." secret={secret} onDone={() => setSecret(undefined)} />;
  return (
    <CreatePanel
      summary={`New token${userId ? ` for ${userId}` : ' for yourself'}…`}
      label="new token"
      submit="Create token"
      running={st.running}
      problems={st.problems}
      onSubmit={submit}
    >
      <Field id="token-days" label="Valid for (days)" error={error}>
        {(a) => <input {...a} type="number" min={1} value={days} onChange={(e) => setDays(e.target.value)} />}
      </Field>
    </CreatePanel>
  );
}
