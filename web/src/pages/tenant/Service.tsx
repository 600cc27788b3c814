import { useEffect, useRef, useState } from 'react';
import {
  LatestEventsQuery,
  PlanServiceUpdateQuery,
  RemoveServiceMutation,
  RetryServiceMutation,
  ServiceChangedSubscription,
  ServiceQuery,
  StartServiceMutation,
  StopServiceMutation,
  UpdateServiceMutation,
  type UpdateServiceInput,
} from '../../api/ops';
import type { JSONValue, ServiceDetail, ServiceUpdatePlan } from '../../api/types';
import { useAccess } from '../../app/access';
import { useApiQuery, useCommand, useLiveAnswer } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { ConfirmButton } from '../../components/Confirm';
import { EventTable } from '../../components/EventTable';
import { Json } from '../../components/Json';
import { Link } from '../../components/Link';
import { Status } from '../../components/Status';
import { Empty, Problems, QueryView } from '../../components/states';
import { Time } from '../../components/Time';
import { humanize } from '../../lib/format';

export function ServicePage({ params }: { params: Record<string, string> }) {
  const id = params.id!;
  const [cw, setCw] = useState<string>();
  const access = useAccess();
  const q = useApiQuery(ServiceQuery, { id, consistentWith: cw });
  useTitle(q.data?.service?.name ?? 'Service');
  useLiveAnswer(q, ServiceChangedSubscription, { id }, { live: access.live('serviceChanged'), debounceMs: 200 });
  return (
    <section>
      <p className="crumbs">
        <Link to="/services">Services</Link>
      </p>
      <QueryView {...q} what="Loading the service">
        {(d) =>
          !d.service ? (
            <>
              <h1>Service not found</h1>
              <Empty>There is no service {id} that you may see.</Empty>
            </>
          ) : (
            <ServiceView service={d.service} onChanged={setCw} />
          )
        }
      </QueryView>
    </section>
  );
}

function ServiceView({ service: s, onChanged }: { service: ServiceDetail; onChanged(c: string): void }) {
  const access = useAccess();
  return (
    <>
      <div className="page-head">
        <h1>
          {s.name} <Status value={s.status} />
        </h1>
        <Lifecycle service={s} onChanged={onChanged} />
      </div>
      {s.cause ? (
        <p className="notice error" role="alert">
          {s.failedIn ? `Failed in ${humanize(s.failedIn)}: ` : ''}
          {s.cause}
        </p>
      ) : null}
      {s.remaining.length > 0 ? (
        <p className="notice warn">
          Left behind: {s.remaining.join(', ')}. Remove the service again, or clean them up by hand.
        </p>
      ) : null}
      <dl className="facts">
        <dt>Template</dt>
        <dd>
          {access.page('template') ? (
            <Link to={`/catalog/${encodeURIComponent(s.templateName)}/${encodeURIComponent(s.templateVersion)}`}>
              {s.templateName} {s.templateVersion}
            </Link>
          ) : (
            `${s.templateName} ${s.templateVersion}`
          )}
        </dd>
        <dt>Tenant</dt>
        <dd title={s.tenantId}>{s.tenant?.name ?? s.tenantId}</dd>
        <dt>Desired</dt>
        <dd data-testid="desired">
          {desiredOf(s)} — {s.templateName} {s.templateVersion}, revision {s.revision ?? 1}
        </dd>
        <dt>Observed</dt>
        <dd data-testid="observed">{observedOf(s)}</dd>
        {s.blueprint ? (
          <>
            <dt>Blueprint</dt>
            <dd data-testid="blueprint">{s.blueprint}</dd>
          </>
        ) : null}
        <dt>Requested</dt>
        <dd>
          <Time value={s.requestedAt} />
        </dd>
        <dt>Last change</dt>
        <dd>
          <Time value={s.updatedAt} />
        </dd>
        <dt>Id</dt>
        <dd>
          <code>{s.id}</code>
        </dd>
      </dl>
      <div className="two">
        <div>
          <h2>Outputs</h2>
          <Json value={s.outputs} label="outputs" />
        </div>
        <div>
          <h2>Variables</h2>
          <p className="muted small">A secret that is set reads "(sealed)": its value is never shown.</p>
          <Json value={s.variables} label="variables" />
        </div>
      </div>
      {s.allowedActions.includes('update') && access.act('service.create', 'updateService') && access.query('planServiceUpdate') ? (
        <UpdatePanel service={s} onChanged={onChanged} />
      ) : null}
      <h2>Resources</h2>
      {s.resources.length === 0 ? (
        <Empty>No resource yet.</Empty>
      ) : (
        <table data-testid="resources">
          <thead>
            <tr>
              <th scope="col">Resource</th>
              <th scope="col">Plugin</th>
              <th scope="col">Status</th>
              <th scope="col">Depends on</th>
              <th scope="col">Outputs</th>
            </tr>
          </thead>
          <tbody>
            {s.resources.map((r) => (
              <tr key={r.id}>
                <td title={r.id}>{r.name ? <strong>{r.name}</strong> : <code>{r.id}</code>}</td>
                <td>
                  {r.plugin} <span className="muted">{r.type}</span>
                </td>
                <td>
                  <Status value={r.status} />
                  {r.error ? <div className="bad-text small">{r.error}</div> : null}
                  {r.drift ? (
                    <div className="bad-text small" data-testid="drift">
                      {r.drift.detail} (found <Time value={r.drift.since} />)
                    </div>
                  ) : null}
                  {(r.health ?? []).map((h) =>
                    h.healthy ? (
                      <div key={h.name} className="muted small" data-testid="health">
                        check {h.name} passes again (since <Time value={h.since} />)
                      </div>
                    ) : (
                      <div key={h.name} className="bad-text small" data-testid="health">
                        check {h.name} fails: {h.detail} (since <Time value={h.since} />)
                      </div>
                    ),
                  )}
                </td>
                <td>
                  {r.dependsOn.length ? (
                    r.dependsOn.map((d) => s.resources.find((x) => x.id === d)?.name ?? d).join(', ')
                  ) : (
                    <span className="muted">—</span>
                  )}
                </td>
                <td className="clip">{r.outputs ? <code>{JSON.stringify(r.outputs)}</code> : <span className="muted">—</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {access.query('events') ? <History service={s} /> : null}
    </>
  );
}

/** The service's own events and its resources', newest first. */
function History({ service: s }: { service: ServiceDetail }) {
  const access = useAccess();
  const streams = [`service-${s.id}`, ...s.resources.map((r) => `resource-${r.id}`)];
  const q = useApiQuery(LatestEventsQuery, { last: 200, filter: { streamIds: streams } });
  // The service's version moves with each of its events: read the history again then.
  const seen = useRef(s.version);
  const { refetch } = q;
  useEffect(() => {
    if (seen.current === s.version) return;
    seen.current = s.version;
    refetch();
  }, [s.version, refetch]);
  const all = `/events?${streams.map((id) => `stream=${encodeURIComponent(id)}`).join('&')}`;
  return (
    <>
      <h2>History</h2>
      <QueryView {...q} what="Loading the history">
        {(d) =>
          d.events.edges.length === 0 ? (
            <Empty>No event yet.</Empty>
          ) : (
            <>
              <EventTable events={d.events.edges.map((e) => e.node).reverse()} />
              {d.events.pageInfo.hasPreviousPage && access.page('events') ? (
                <p>
                  <Link to={all}>The whole history</Link>
                </p>
              ) : null}
            </>
          )
        }
      </QueryView>
    </>
  );
}

function Lifecycle({ service: s, onChanged }: { service: ServiceDetail; onChanged(c: string): void }) {
  const access = useAccess();
  const [retry, retrySt] = useCommand(RetryServiceMutation);
  const [start, startSt] = useCommand(StartServiceMutation);
  const [stop, stopSt] = useCommand(StopServiceMutation);
  const [remove, removeSt] = useCommand(RemoveServiceMutation);
  const allowed = new Set(s.allowedActions);
  const problems = retrySt.problems ?? startSt.problems ?? stopSt.problems ?? removeSt.problems;
  const running = retrySt.running || startSt.running || stopSt.running || removeSt.running;
  return (
    <div className="actions">
      {allowed.has('retry') && access.act('service.create', 'retryService') ? (
        <ConfirmButton
          label="Retry"
          title={`Deploy ${s.name} again?`}
          disabled={running}
          onConfirm={async () => {
            const r = await retry({ serviceId: s.id });
            if (r) onChanged(r.retryService.cursor);
          }}
        >
          Its registration was rolled back; its resources are planned and created anew (placed on nodes with room now).
        </ConfirmButton>
      ) : null}
      {allowed.has('start') && access.act('service.start', 'startService') ? (
        <ConfirmButton
          label="Start"
          title={`Start ${s.name}?`}
          disabled={running}
          onConfirm={async () => {
            const r = await start({ serviceId: s.id });
            if (r) onChanged(r.startService.cursor);
          }}
        >
          Its resources are started in dependency order.
        </ConfirmButton>
      ) : null}
      {allowed.has('stop') && access.act('service.stop', 'stopService') ? (
        <ConfirmButton
          label="Stop"
          title={`Stop ${s.name}?`}
          disabled={running}
          onConfirm={async () => {
            const r = await stop({ serviceId: s.id });
            if (r) onChanged(r.stopService.cursor);
          }}
        >
          Its resources are stopped in reverse dependency order; they are kept and can be started again.
        </ConfirmButton>
      ) : null}
      {allowed.has('remove') && access.act('service.remove', 'removeService') ? (
        <ConfirmButton
          danger
          label="Remove"
          title={`Remove ${s.name}?`}
          disabled={running}
          onConfirm={async () => {
            const r = await remove({ serviceId: s.id });
            if (r) onChanged(r.removeService.cursor);
          }}
        >
          Every resource of the service is destroyed. This cannot be undone.
        </ConfirmButton>
      ) : null}
      {problems ? <Problems problems={problems} /> : null}
    </div>
  );
}

/**
 * Change a service's template version or variables: the plan first (what
 * each resource undergoes, the properties that change), then the update,
 * confirmed.
 */
function UpdatePanel({ service: s, onChanged }: { service: ServiceDetail; onChanged(c: string): void }) {
  const [open, setOpen] = useState(false);
  const [version, setVersion] = useState(s.templateVersion);
  const [text, setText] = useState('{}');
  const [asked, setAsked] = useState<UpdateServiceInput>();
  const [parseError, setParseError] = useState<string>();
  const plan = useApiQuery(PlanServiceUpdateQuery, { input: asked ?? { serviceId: s.id } }, { pause: !asked, policy: 'network-only' });
  const [update, updateSt] = useCommand(UpdateServiceMutation);
  if (!open) {
    return (
      <p>
        <button type="button" onClick={() => setOpen(true)}>
          Update…
        </button>
      </p>
    );
  }
  const ask = () => {
    let variables: JSONValue;
    try {
      variables = JSON.parse(text || '{}') as JSONValue;
    } catch (e) {
      setParseError(`Variables must be a JSON object: ${(e as Error).message}`);
      return;
    }
    setParseError(undefined);
    setAsked({ serviceId: s.id, templateVersion: version, variables });
  };
  const p = asked ? plan.data?.planServiceUpdate : undefined;
  return (
    <section className="panel" aria-label="Update the service">
      <h2>Update</h2>
      <p className="muted small">
        Another version of {s.templateName}, or other values: variables left out keep theirs; null puts one back to its default.
      </p>
      <label>
        Version <input value={version} onChange={(e) => setVersion(e.target.value)} aria-label="Template version" />
      </label>
      <label>
        Variables to change (JSON)
        <textarea value={text} rows={4} onChange={(e) => setText(e.target.value)} aria-label="Variables to change" />
      </label>
      <div className="actions">
        <button type="button" onClick={ask} disabled={plan.fetching}>
          Plan the update
        </button>
        <button type="button" onClick={() => setOpen(false)}>
          Cancel
        </button>
      </div>
      {parseError ? <p className="notice error">{parseError}</p> : null}
      {asked && plan.problems ? <Problems problems={plan.problems} /> : null}
      {p ? (
        <>
          <UpdatePlanView plan={p} />
          {p.noChange ? null : (
            <ConfirmButton
              label="Apply the update"
              title={`Update ${s.name} to revision ${p.revision + 1}?`}
              disabled={updateSt.running}
              onConfirm={async () => {
                const r = await update(asked!);
                if (r) {
                  onChanged(r.updateService.cursor);
                  setOpen(false);
                  setAsked(undefined);
                }
              }}
            >
              {p.creates} to create, {p.updates} to update in place, {p.replaces} to replace, {p.destroys} to destroy. If a step fails, the service
              goes back to revision {p.revision}.
            </ConfirmButton>
          )}
          {updateSt.problems ? <Problems problems={updateSt.problems} /> : null}
        </>
      ) : null}
    </section>
  );
}

const shown = (v: JSONValue) => (v === null || v === undefined ? '—' : JSON.stringify(v));

function UpdatePlanView({ plan: p }: { plan: ServiceUpdatePlan }) {
  if (p.noChange) return <p data-testid="update-plan">No change: the service already has this version and these values.</p>;
  const changed = p.changes.filter((c) => c.action !== 'KEEP');
  return (
    <div data-testid="update-plan">
      <p>
        Revision {p.revision} → {p.revision + 1}
        {p.fromVersion !== p.toVersion ? `, version ${p.fromVersion} → ${p.toVersion}` : ''}: {p.creates} to create, {p.updates} to update in place,{' '}
        {p.replaces} to replace, {p.destroys} to destroy.
      </p>
      {p.variables.length ? (
        <ul>
          {p.variables.map((v) => (
            <li key={v.name}>
              <code>{v.name}</code>: {shown(v.old)} → {shown(v.new)}
            </li>
          ))}
        </ul>
      ) : null}
      <table>
        <thead>
          <tr>
            <th scope="col">Resource</th>
            <th scope="col">Action</th>
            <th scope="col">Why</th>
            <th scope="col">Properties</th>
          </tr>
        </thead>
        <tbody>
          {changed.map((c) => (
            <tr key={c.resourceId}>
              <td title={c.resourceId}>
                {c.name} <span className="muted">{c.type}</span>
              </td>
              <td>{humanize(c.action)}</td>
              <td>{c.reasons.join('; ')}</td>
              <td>
                {c.properties.map((pc) => (
                  <div key={pc.path} className="small">
                    <code>{pc.path}</code>: {shown(pc.old)} → {shown(pc.new)}
                  </div>
                ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** What the service's log says it should be. */
function desiredOf(s: ServiceDetail): string {
  switch (s.status) {
    case 'RUNNING':
    case 'STARTING':
    case 'REPAIRING':
    case 'DEGRADED':
      return 'running';
    case 'STOPPED':
    case 'STOPPING':
      return 'stopped';
    case 'UPDATING':
    case 'REVERTING':
      return 'as before, at the new revision';
    case 'REMOVED':
    case 'REMOVING':
      return 'removed';
    default:
      return humanize(s.status).toLowerCase();
  }
}

/** What the reconciler last found of the resources, in words. */
function observedOf(s: ServiceDetail): string {
  const drifted = s.resources.filter((r) => r.drift).length;
  const failing = s.resources.reduce((n, r) => n + (r.health ?? []).filter((h) => !h.healthy).length, 0);
  if (!drifted && !failing) return 'as declared: no drift, no failing health check';
  const parts = [];
  if (drifted) parts.push(`${drifted} ${drifted === 1 ? 'resource differs' : 'resources differ'}`);
  if (failing) parts.push(`${failing} failing health ${failing === 1 ? 'check' : 'checks'}`);
  return parts.join(', ');
}
