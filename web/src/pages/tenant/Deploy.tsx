import { useMemo, useState, type FormEvent } from 'react';
import { CreateServiceMutation, TemplateQuery, TemplatesQuery } from '../../api/ops';
import type { TemplateDetail } from '../../api/types';
import { useSession } from '../../app/context';
import { useApiQuery, useCommand } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { useUrlState } from '../../app/useUrlState';
import { Field } from '../../components/Field';
import { Link } from '../../components/Link';
import { Status } from '../../components/Status';
import { VariableField } from '../../components/VariableField';
import { Empty, Problems, QueryView } from '../../components/states';
import { convert, fieldsFor, initialValues, switchFlavor, variableOfProblem, type FormValues } from '../../lib/form';
import { isTenantRole } from '../../lib/roles';
import { navigate } from '../../lib/router';

const spec = { template: 'string', version: 'string' } as const;

export function DeployPage() {
  useTitle('Deploy a service');
  const [state, setState] = useUrlState(spec);
  return (
    <section>
      <p className="crumbs">
        <Link to="/services">Services</Link>
      </p>
      <h1>Deploy a service</h1>
      {state.template && state.version ? (
        <DeployTemplate name={state.template} version={state.version} />
      ) : (
        <ChooseTemplate onChoose={(template, version) => setState({ template, version })} />
      )}
    </section>
  );
}

function ChooseTemplate({ onChoose }: { onChoose(name: string, version: string): void }) {
  const q = useApiQuery(TemplatesQuery, { first: 200, filter: { status: ['PUBLISHED'], latestOnly: true } });
  return (
    <QueryView {...q} what="Loading the catalog">
      {(d) =>
        d.templates.edges.length === 0 ? (
          <Empty>Nothing in the catalog can be deployed yet.</Empty>
        ) : (
          <>
            <p>Choose what to deploy:</p>
            <ul className="cards">
              {d.templates.edges.map(({ node: t }) => (
                <li key={t.id}>
                  <button type="button" className="card" onClick={() => onChoose(t.name, t.version)}>
                    <strong>{t.name}</strong> <span className="muted">{t.version}</span>
                    <span className="small">{t.description ?? t.category ?? ''}</span>
                  </button>
                </li>
              ))}
            </ul>
          </>
        )
      }
    </QueryView>
  );
}

function DeployTemplate({ name, version }: { name: string; version: string }) {
  const q = useApiQuery(TemplateQuery, { name, version });
  return (
    <QueryView {...q} what="Loading the template">
      {(d) =>
        !d.template ? (
          <Empty>
            There is no version {version} of {name} in the catalog. <Link to="/services/new">Choose another</Link>.
          </Empty>
        ) : d.template.status !== 'PUBLISHED' ? (
          <p className="notice warn">
            {name} {version} is <Status value={d.template.status} /> and cannot be deployed. <Link to="/services/new">Choose another</Link>.
          </p>
        ) : (
          <DeployForm template={d.template} />
        )
      }
    </QueryView>
  );
}

function DeployForm({ template }: { template: TemplateDetail }) {
  const { viewer } = useSession();
  const fields = useMemo(() => fieldsFor(template.variables), [template.variables]);
  const names = useMemo(() => template.variables.map((v) => v.name), [template.variables]);
  const [flavorName, setFlavorName] = useState('');
  const flavor = template.flavors.find((f) => f.name === flavorName) ?? null;
  const [values, setValues] = useState<FormValues>(() => initialValues(template.variables, null));
  const [touched, setTouched] = useState<ReadonlySet<string>>(new Set());
  const [serviceName, setServiceName] = useState('');
  const [tenantId, setTenantId] = useState('');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [create, st] = useCommand(CreateServiceMutation);
  const needsTenant = !isTenantRole(viewer.role);

  async function submit(e: FormEvent) {
    e.preventDefault();
    const c = convert(template.variables, values, flavor);
    const errs: Record<string, string> = { ...c.errors };
    if (serviceName.trim() === '') errs['@name'] = 'Give the service a name.';
    if (needsTenant && tenantId.trim() === '') errs['@tenant'] = 'Name the tenant to deploy for.';
    setErrors(errs);
    const first = Object.keys(errs)[0];
    if (first) {
      document.getElementById(first === '@name' ? 'svc-name' : first === '@tenant' ? 'svc-tenant' : `var-${first}`)?.focus();
      return;
    }
    const r = await create({
      name: serviceName.trim(),
      templateName: template.name,
      templateVersion: template.version,
      variables: c.variables,
      flavor: flavor?.name,
      tenantId: needsTenant ? tenantId.trim() : undefined,
    });
    if (r) {
      navigate(`/services/${encodeURIComponent(r.createService.service.id)}`);
    }
  }

  // A refusal that names a variable or the name is shown at that field.
  const serverErrors: Record<string, string> = {};
  const unplaced = (st.problems ?? []).filter((p) => {
    if (p.code !== 'INVALID_INPUT') return true;
    const v = variableOfProblem(p.field, p.message, names);
    if (v) serverErrors[v] = p.message.replace(/^[^:]*variables\.[A-Za-z0-9_]+:\s*/, '');
    else if (p.field === 'name' || p.field === 'input.name') serverErrors['@name'] = p.message;
    else return true;
    return false;
  });
  const errorOf = (k: string) => errors[k] ?? serverErrors[k];

  return (
    <form className="form" onSubmit={submit} noValidate aria-label={`deploy ${template.name}`}>
      <p>
        {template.name} <span className="muted">{template.version}</span> by {template.vendor}
        {template.description ? ` — ${template.description}` : ''}
      </p>
      <Field id="svc-name" label="Service name" error={errorOf('@name')} required>
        {(a) => <input {...a} value={serviceName} autoComplete="off" onChange={(e) => setServiceName(e.target.value)} />}
      </Field>
      {needsTenant ? (
        <Field id="svc-tenant" label="Tenant id" error={errorOf('@tenant')} required>
          {(a) => <input {...a} value={tenantId} onChange={(e) => setTenantId(e.target.value)} />}
        </Field>
      ) : null}
      {template.flavors.length > 0 ? (
        <Field id="svc-flavor" label="Flavor" hint={flavor?.description ?? 'A preset that fills in the variables below; each can still be changed.'}>
          {(a) => (
            <select
              {...a}
              value={flavorName}
              onChange={(e) => {
                const next = template.flavors.find((f) => f.name === e.target.value) ?? null;
                setFlavorName(e.target.value);
                setValues((v) => switchFlavor(template.variables, v, touched, next));
              }}
            >
              <option value="">none</option>
              {template.flavors.map((f) => (
                <option key={f.name} value={f.name}>
                  {f.name}
                </option>
              ))}
            </select>
          )}
        </Field>
      ) : null}
      {fields.length > 0 ? (
        <fieldset>
          <legend>Variables</legend>
          {fields.map((f) => (
            <VariableField
              key={f.name}
              field={f}
              value={values[f.name] ?? ''}
              error={errorOf(f.name)}
              onChange={(v) => {
                setValues((vals) => ({ ...vals, [f.name]: v }));
                setTouched((t) => new Set(t).add(f.name));
              }}
            />
          ))}
        </fieldset>
      ) : (
        <p className="muted">This template takes no input.</p>
      )}
      {st.problems ? (
        unplaced.length > 0 ? (
          <Problems problems={unplaced} title="The service was not deployed." />
        ) : (
          <p className="notice error" role="alert">
            The service was not deployed: see the fields marked above.
          </p>
        )
      ) : null}
      <div className="actions">
        <button type="submit" className="primary" disabled={st.running}>
          {st.running ? 'Deploying…' : 'Deploy'}
        </button>
      </div>
    </form>
  );
}
