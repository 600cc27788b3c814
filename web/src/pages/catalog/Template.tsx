import { useState } from 'react';
import { DeprecateTemplateMutation, PublishTemplateMutation, TemplateQuery, TemplatesQuery } from '../../api/ops';
import type { TemplateDetail } from '../../api/types';
import { useAccess } from '../../app/access';
import { useSession } from '../../app/context';
import { useApiQuery, useCommand } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { ConfirmButton } from '../../components/Confirm';
import { Field } from '../../components/Field';
import { Json } from '../../components/Json';
import { Link } from '../../components/Link';
import { Status } from '../../components/Status';
import { Empty, Problems, QueryView } from '../../components/states';
import { Time } from '../../components/Time';
import { humanize } from '../../lib/format';
import { can } from '../../lib/roles';
import { templatePath } from './Catalog';

export function TemplatePage({ params }: { params: Record<string, string> }) {
  const name = params.name!;
  const version = params.version!;
  useTitle(`${name} ${version}`);
  const [cw, setCw] = useState<string>();
  const q = useApiQuery(TemplateQuery, { name, version, consistentWith: cw });
  return (
    <section>
      <p className="crumbs">
        <Link to="/catalog">Catalog</Link>
      </p>
      <QueryView {...q} what="Loading the template">
        {(d) =>
          !d.template ? (
            <>
              <h1>Not in the catalog</h1>
              <Empty>
                There is no version {version} of {name}.
              </Empty>
            </>
          ) : (
            <TemplateView t={d.template} onChanged={setCw} />
          )
        }
      </QueryView>
    </section>
  );
}

function TemplateView({ t, onChanged }: { t: TemplateDetail; onChanged(c: string): void }) {
  const { viewer } = useSession();
  const access = useAccess();
  const [publish, pSt] = useCommand(PublishTemplateMutation);
  const [deprecate, dSt] = useCommand(DeprecateTemplateMutation);
  const [reason, setReason] = useState('');
  const allowed = new Set(t.allowedActions);
  const deployable = t.status === 'PUBLISHED' && access.page('deploy') && can(viewer, 'service.create');
  return (
    <>
      <div className="page-head">
        <h1>
          {t.name} <span className="muted">{t.version}</span> <Status value={t.status} />
        </h1>
        <div className="actions">
          {deployable ? (
            <Link className="button primary" to={`/services/new?template=${encodeURIComponent(t.name)}&version=${encodeURIComponent(t.version)}`}>
              Deploy…
            </Link>
          ) : null}
          {allowed.has('publish') && access.act('template.publish', 'publishTemplate') ? (
            <button
              type="button"
              disabled={pSt.running}
              onClick={async () => {
                const r = await publish({ name: t.name, version: t.version });
                if (r) onChanged(r.publishTemplate.cursor);
              }}
            >
              Publish
            </button>
          ) : null}
          {allowed.has('deprecate') && access.act('template.deprecate', 'deprecateTemplate') ? (
            <ConfirmButton
              label="Deprecate"
              title={`Deprecate ${t.name} ${t.version}?`}
              onConfirm={async () => {
                const r = await deprecate({ name: t.name, version: t.version, reason: reason || undefined });
                if (r) onChanged(r.deprecateTemplate.cursor);
              }}
            >
              <p>It is no longer offered for new deployments; services deployed from it stay.</p>
              <Field id="deprecate-reason" label="Reason">
                {(a) => <input {...a} value={reason} onChange={(e) => setReason(e.target.value)} />}
              </Field>
            </ConfirmButton>
          ) : null}
        </div>
      </div>
      {pSt.problems ? <Problems problems={pSt.problems} /> : null}
      {dSt.problems ? <Problems problems={dSt.problems} /> : null}
      {t.description ? <p>{t.description}</p> : null}
      <dl className="facts">
        <dt>Vendor</dt>
        <dd>{t.vendor}</dd>
        <dt>Category</dt>
        <dd>{t.category ?? '—'}</dd>
        <dt>Registered</dt>
        <dd>
          <Time value={t.registeredAt} />
        </dd>
        <dt>Published</dt>
        <dd>
          <Time value={t.publishedAt} />
        </dd>
        {t.deprecatedAt ? (
          <>
            <dt>Deprecated</dt>
            <dd>
              <Time value={t.deprecatedAt} /> {t.deprecationReason ? `— ${t.deprecationReason}` : ''}
            </dd>
          </>
        ) : null}
        <dt>Digest</dt>
        <dd>
          <code className="hash">{t.digest}</code>
        </dd>
      </dl>
      <h2>Variables</h2>
      {t.variables.length === 0 ? (
        <Empty>This template takes no input.</Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Type</th>
              <th scope="col">Default</th>
              <th scope="col">Description</th>
            </tr>
          </thead>
          <tbody>
            {t.variables.map((v) => (
              <tr key={v.name}>
                <td>
                  <code>{v.name}</code>
                  {v.required ? <span className="muted"> required</span> : null}
                  {v.sensitive ? <span className="muted"> secret</span> : null}
                </td>
                <td>{humanize(v.type)}</td>
                <td>{v.default === null || v.default === undefined ? <span className="muted">—</span> : <code>{JSON.stringify(v.default)}</code>}</td>
                <td>{v.description ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {t.flavors.length > 0 ? (
        <>
          <h2>Flavors</h2>
          <ul>
            {t.flavors.map((f) => (
              <li key={f.name}>
                <strong>{f.name}</strong> {f.description ? `— ${f.description}` : ''} <code className="muted">{JSON.stringify(f.variables)}</code>
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {access.query('templates') ? <Versions name={t.name} current={t.version} /> : null}
      <details>
        <summary>Descriptor</summary>
        <Json value={t.descriptor} label="descriptor" />
      </details>
    </>
  );
}

function Versions({ name, current }: { name: string; current: string }) {
  const q = useApiQuery(TemplatesQuery, { first: 100, filter: { name } });
  const versions = q.data?.templates.edges.map((e) => e.node).filter((t) => t.name === name) ?? [];
  return (
    <>
      <h2>Versions</h2>
      {q.problems ? <Problems problems={q.problems} /> : null}
      {versions.length === 0 && !q.problems ? <p className="muted">{q.fetching ? 'Loading…' : 'Only this one.'}</p> : null}
      <ul className="versions">
        {versions.map((v) => (
          <li key={v.id}>
            {v.version === current ? (
              <strong aria-current="page">{v.version}</strong>
            ) : (
              <Link to={templatePath(v.name, v.version)}>{v.version}</Link>
            )}{' '}
            <Status value={v.status} />
          </li>
        ))}
      </ul>
    </>
  );
}
