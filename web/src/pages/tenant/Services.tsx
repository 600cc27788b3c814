import { ServiceChangedSubscription, ServicesQuery } from '../../api/ops';
import { serviceStatuses, type ServiceStatus } from '../../api/types';
import { useAccess } from '../../app/access';
import { useSession } from '../../app/context';
import { useApiQuery, useLiveAnswer } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { useUrlState } from '../../app/useUrlState';
import { Checks } from '../../components/Checks';
import { Link } from '../../components/Link';
import { Pager } from '../../components/Pager';
import { SearchBox } from '../../components/SearchBox';
import { Status } from '../../components/Status';
import { Empty, QueryView } from '../../components/states';
import { Time } from '../../components/Time';
import { can, isTenantRole } from '../../lib/roles';

const spec = { name: 'string', template: 'string', tenant: 'string', status: 'list', removed: 'bool', after: 'string' } as const;
const shownByDefault = serviceStatuses.filter((s) => s !== 'REMOVED');

export function ServicesPage() {
  useTitle('Services');
  const { viewer } = useSession();
  const access = useAccess();
  const [state, setState] = useUrlState(spec);
  const tenantRole = isTenantRole(viewer.role);
  const status = state.status.length ? (state.status as ServiceStatus[]) : state.removed ? undefined : shownByDefault;
  const filter = {
    name: state.name || undefined,
    templateName: state.template || undefined,
    tenantId: tenantRole ? undefined : state.tenant || undefined,
    status,
  };
  const q = useApiQuery(ServicesQuery, { first: 50, after: state.after || null, filter });
  useLiveAnswer(q, ServiceChangedSubscription, {}, { live: access.live('serviceChanged'), debounceMs: 300 });
  const filtered = Boolean(state.name || state.template || state.tenant || state.status.length);
  return (
    <section>
      <div className="page-head">
        <h1>Services</h1>
        {access.page('deploy') && can(viewer, 'service.create') ? (
          <Link to="/services/new" className="button primary">
            Deploy a service…
          </Link>
        ) : null}
      </div>
      <form className="filters" role="search" aria-label="filter services" onSubmit={(e) => e.preventDefault()}>
        <SearchBox id="svc-q" label="Name" value={state.name} onApply={(v) => setState({ name: v, after: '' })} />
        <SearchBox id="svc-template" label="Template" value={state.template} onApply={(v) => setState({ template: v, after: '' })} />
        {!tenantRole ? <SearchBox id="svc-tenant" label="Tenant id" value={state.tenant} onApply={(v) => setState({ tenant: v, after: '' })} /> : null}
        <div className="field inline">
          <label>
            <input type="checkbox" checked={state.removed} onChange={(e) => setState({ removed: e.target.checked, after: '' })} /> Include removed
          </label>
        </div>
        <Checks legend="Status" options={serviceStatuses} value={state.status} onChange={(v) => setState({ status: v, after: '' })} />
      </form>
      <QueryView {...q} what="Loading services">
        {(d) =>
          d.services.edges.length === 0 ? (
            <Empty>
              {filtered
                ? 'No service matches these filters.'
                : state.removed
                  ? 'No service yet. Deploy one from the catalog.'
                  : 'No service running or kept. Removed services are hidden: tick "Include removed" to see them, or deploy one from the catalog.'}
            </Empty>
          ) : (
            <>
              <table aria-busy={q.fetching} data-testid="services">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Template</th>
                    {!tenantRole ? <th scope="col">Tenant</th> : null}
                    <th scope="col">Status</th>
                    <th scope="col">Requested</th>
                    <th scope="col">Changed</th>
                  </tr>
                </thead>
                <tbody>
                  {d.services.edges.map(({ node: s }) => (
                    <tr key={s.id} data-service={s.name}>
                      <td>
                        <Link to={`/services/${encodeURIComponent(s.id)}`}>{s.name}</Link>
                      </td>
                      <td>
                        {s.templateName} <span className="muted">{s.templateVersion}</span>
                      </td>
                      {!tenantRole ? <td title={s.tenantId}>{s.tenant?.name ?? s.tenantId}</td> : null}
                      <td>
                        <Status value={s.status} />
                      </td>
                      <td>
                        <Time value={s.requestedAt} />
                      </td>
                      <td>
                        <Time value={s.updatedAt} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager
                pageInfo={d.services.pageInfo}
                atStart={!state.after}
                shown={d.services.edges.length}
                total={d.services.totalCount}
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
