import { TemplatesQuery } from '../../api/ops';
import { templateStatuses, type TemplateStatus } from '../../api/types';
import { useAccess } from '../../app/access';
import { useSession } from '../../app/context';
import { useApiQuery } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { useUrlState } from '../../app/useUrlState';
import { Checks } from '../../components/Checks';
import { Link } from '../../components/Link';
import { Pager } from '../../components/Pager';
import { SearchBox } from '../../components/SearchBox';
import { Status } from '../../components/Status';
import { Empty, QueryView } from '../../components/states';
import { Time } from '../../components/Time';
import { isTenantRole } from '../../lib/roles';

const spec = { name: 'string', category: 'string', vendor: 'string', status: 'list', all: 'bool', after: 'string' } as const;

export function templatePath(name: string, version: string): string {
  return `/catalog/${encodeURIComponent(name)}/${encodeURIComponent(version)}`;
}

export function CatalogPage() {
  useTitle('Catalog');
  const { viewer } = useSession();
  const access = useAccess();
  const [state, setState] = useUrlState(spec);
  // Tenants deploy published versions: they see the newest of each by default.
  const tenantView = isTenantRole(viewer.role);
  const filter = {
    name: state.name || undefined,
    category: state.category || undefined,
    vendor: state.vendor || undefined,
    status: state.status.length ? (state.status as TemplateStatus[]) : tenantView ? (['PUBLISHED'] as TemplateStatus[]) : undefined,
    latestOnly: tenantView && !state.all ? true : undefined,
  };
  const q = useApiQuery(TemplatesQuery, { first: 50, after: state.after || null, filter });
  return (
    <section>
      <div className="page-head">
        <h1>Catalog</h1>
        {access.page('register-template') && access.act('template.register', 'registerTemplate') ? (
          <Link to="/catalog/register" className="button">
            Register a descriptor…
          </Link>
        ) : null}
      </div>
      <form className="filters" role="search" aria-label="filter the catalog" onSubmit={(e) => e.preventDefault()}>
        <SearchBox id="tpl-name" label="Name" value={state.name} onApply={(v) => setState({ name: v, after: '' })} />
        <SearchBox id="tpl-category" label="Category" value={state.category} onApply={(v) => setState({ category: v, after: '' })} />
        <SearchBox id="tpl-vendor" label="Vendor" value={state.vendor} onApply={(v) => setState({ vendor: v, after: '' })} />
        {tenantView ? (
          <div className="field inline">
            <label>
              <input type="checkbox" checked={state.all} onChange={(e) => setState({ all: e.target.checked, after: '' })} /> Every version
            </label>
          </div>
        ) : (
          <Checks legend="Status" options={templateStatuses} value={state.status} onChange={(v) => setState({ status: v, after: '' })} />
        )}
      </form>
      <QueryView {...q} what="Loading the catalog">
        {(d) =>
          d.templates.edges.length === 0 ? (
            <Empty>{state.name || state.category || state.vendor || state.status.length ? 'No entry matches these filters.' : 'The catalog is empty.'}</Empty>
          ) : (
            <>
              <table aria-busy={q.fetching} data-testid="catalog">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Version</th>
                    <th scope="col">Category</th>
                    <th scope="col">Vendor</th>
                    <th scope="col">Status</th>
                    <th scope="col">Registered</th>
                  </tr>
                </thead>
                <tbody>
                  {d.templates.edges.map(({ node: t }) => (
                    <tr key={t.id}>
                      <td>
                        <Link to={templatePath(t.name, t.version)}>{t.name}</Link>
                        {t.description ? <div className="muted small clip">{t.description}</div> : null}
                      </td>
                      <td>{t.version}</td>
                      <td>{t.category ?? <span className="muted">—</span>}</td>
                      <td>{t.vendor}</td>
                      <td>
                        <Status value={t.status} />
                      </td>
                      <td>
                        <Time value={t.registeredAt} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager
                pageInfo={d.templates.pageInfo}
                atStart={!state.after}
                shown={d.templates.edges.length}
                total={d.templates.totalCount}
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
