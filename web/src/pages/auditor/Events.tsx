import { useState } from 'react';
import { EventsQuery, EventsSubscription, HeadQuery, type EventFilter } from '../../api/ops';
import type { Event } from '../../api/types';
import { useAccess } from '../../app/access';
import { useSession } from '../../app/context';
import { useApiQuery, useSubscriptionEffect } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { useUrlState } from '../../app/useUrlState';
import { EventTable } from '../../components/EventTable';
import { Pager } from '../../components/Pager';
import { SearchBox } from '../../components/SearchBox';
import { Empty, Problems, QueryView } from '../../components/states';
import { isTenantRole } from '../../lib/roles';
import { isoToLocalInput, localInputToISO } from '../../lib/urlState';

const spec = {
  stream: 'list',
  streamType: 'list',
  type: 'list',
  actor: 'string',
  correlation: 'string',
  tenant: 'string',
  from: 'string',
  to: 'string',
  after: 'string',
  follow: 'bool',
} as const;

const streamTypes = ['node', 'job', 'template', 'service', 'resource', 'tenant', 'user', 'api_token', 'location'];

function splitList(v: string): string[] {
  return v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

export function EventsPage() {
  useTitle('Event history');
  const { viewer } = useSession();
  const [state, setState] = useUrlState(spec);
  const filter: EventFilter = {
    streamIds: state.stream.length ? state.stream : undefined,
    streamTypes: state.streamType.length ? state.streamType : undefined,
    types: state.type.length ? state.type : undefined,
    actor: state.actor || undefined,
    correlationId: state.correlation || undefined,
    tenantId: isTenantRole(viewer.role) ? undefined : state.tenant || undefined,
    time: state.from || state.to ? { from: state.from || undefined, to: state.to || undefined } : undefined,
  };
  const q = useApiQuery(EventsQuery, { first: 50, after: state.after || null, filter });
  const filtered = Object.values(filter).some((v) => v !== undefined);
  const access = useAccess();
  const canFollow = access.live('events');
  return (
    <section>
      <h1>Event history</h1>
      <form className="filters wide" role="search" aria-label="filter events" onSubmit={(e) => e.preventDefault()}>
        <SearchBox id="ev-stream" label="Stream ids" placeholder="node-n1, service-s1" value={state.stream.join(', ')} onApply={(v) => setState({ stream: splitList(v), after: '' })} />
        <div className="field inline">
          <label htmlFor="ev-stream-type">Stream type</label>
          <select id="ev-stream-type" value={state.streamType[0] ?? ''} onChange={(e) => setState({ streamType: e.target.value ? [e.target.value] : [], after: '' })}>
            <option value="">any</option>
            {streamTypes.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </div>
        <SearchBox id="ev-types" label="Event types" placeholder="node.enrolled, job.finished" value={state.type.join(', ')} onApply={(v) => setState({ type: splitList(v), after: '' })} />
        <SearchBox id="ev-actor" label="Actor" value={state.actor} onApply={(v) => setState({ actor: v, after: '' })} />
        <SearchBox id="ev-correlation" label="Correlation id" value={state.correlation} onApply={(v) => setState({ correlation: v, after: '' })} />
        {!isTenantRole(viewer.role) ? <SearchBox id="ev-tenant" label="Tenant id" value={state.tenant} onApply={(v) => setState({ tenant: v, after: '' })} /> : null}
        <div className="field inline">
          <label htmlFor="ev-from">From</label>
          <input
            id="ev-from"
            type="datetime-local"
            step={1}
            value={isoToLocalInput(state.from)}
            onChange={(e) => setState({ from: localInputToISO(e.target.value) ?? '', after: '' }, { replace: true })}
          />
        </div>
        <div className="field inline">
          <label htmlFor="ev-to">Before</label>
          <input
            id="ev-to"
            type="datetime-local"
            step={1}
            value={isoToLocalInput(state.to)}
            onChange={(e) => setState({ to: localInputToISO(e.target.value) ?? '', after: '' }, { replace: true })}
          />
        </div>
        {canFollow ? (
          <div className="field inline">
            <label>
              <input type="checkbox" checked={state.follow} onChange={(e) => setState({ follow: e.target.checked }, { replace: true })} /> Follow new
              events
            </label>
          </div>
        ) : null}
      </form>
      {canFollow && state.follow ? <Following filter={filter} /> : null}
      <QueryView {...q} what="Loading events">
        {(d) =>
          d.events.edges.length === 0 ? (
            <Empty>{state.after ? 'No more events.' : filtered ? 'No event matches these filters.' : 'The log is empty.'}</Empty>
          ) : (
            <>
              <EventTable events={d.events.edges.map((e) => e.node)} busy={q.fetching} />
              <Pager
                pageInfo={d.events.pageInfo}
                atStart={!state.after}
                shown={d.events.edges.length}
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

const followLimit = 200;

/**
 * Events matching the filter as they are recorded from now on, newest first.
 * "Now" is the head of the log read first: the subscription starts after it
 * (and, when it starts again, after the newest event received), so no event
 * recorded while it was being set up is missed.
 */
function Following({ filter }: { filter: EventFilter }) {
  const [events, setEvents] = useState<Event[]>([]);
  const head = useApiQuery(HeadQuery, {}, { policy: 'network-only' });
  const from = head.data?.head;
  useSubscriptionEffect(
    EventsSubscription,
    { filter },
    (d) => setEvents((list) => (list.some((e) => e.cursor === d.events.cursor) ? list : [d.events, ...list].slice(0, followLimit))),
    { pause: from === undefined, after: events[0]?.cursor ?? from },
  );
  return (
    <section aria-labelledby="following" className="panel">
      <h2 id="following">New events</h2>
      {head.problems ? <Problems problems={head.problems} /> : null}
      <p className="muted small" role="status" aria-live="polite">
        {from === undefined
          ? 'Starting to follow…'
          : events.length === 0
            ? 'Waiting for new events that match the filters…'
            : `${events.length} new since you started following${events.length === followLimit ? ' (the latest shown)' : ''}.`}
      </p>
      {events.length > 0 ? <EventTable events={events} /> : null}
    </section>
  );
}
