import { EventQuery } from '../../api/ops';
import type { EventDetail } from '../../api/types';
import { useAccess } from '../../app/access';
import { useApiQuery } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { Json } from '../../components/Json';
import { Link } from '../../components/Link';
import { Empty, QueryView } from '../../components/states';
import { Time } from '../../components/Time';
import { entityOfStream, entityPage } from '../../lib/entities';

export function EventPage({ params }: { params: Record<string, string> }) {
  const cursor = params.cursor!;
  const q = useApiQuery(EventQuery, { cursor });
  useTitle(q.data?.event?.type ?? 'Event');
  return (
    <section>
      <p className="crumbs">
        <Link to="/events">Event history</Link>
      </p>
      <QueryView {...q} what="Loading the event">
        {(d) =>
          !d.event ? (
            <>
              <h1>Event not found</h1>
              <Empty>There is no event at cursor {cursor} that you may see.</Empty>
            </>
          ) : (
            <EventView e={d.event} />
          )
        }
      </QueryView>
    </section>
  );
}

function EventView({ e }: { e: EventDetail }) {
  const access = useAccess();
  const entity = entityOfStream(e.streamType, e.streamId);
  const page = entity ? entityPage(entity.type, entity.id) : undefined;
  const m = e.metadata;
  return (
    <>
      <h1>
        <code>{e.type}</code>
      </h1>
      <dl className="facts">
        <dt>Stream</dt>
        <dd>
          <Link to={`/events?stream=${encodeURIComponent(e.streamId)}`}>
            <code>{e.streamId}</code>
          </Link>{' '}
          version {e.version}
          {page && access.page(page.page) ? (
            <>
              {' '}
              · <Link to={page.path}>current state</Link>
            </>
          ) : null}
          {entity && access.page('as-of') ? (
            <>
              {' '}
              ·{' '}
              <Link to={`/as-of?type=${entity.type}&id=${encodeURIComponent(entity.id)}&cursor=${encodeURIComponent(e.cursor)}`}>
                state right after this event
              </Link>
            </>
          ) : null}
        </dd>
        <dt>Recorded</dt>
        <dd>
          <Time value={e.time} absolute />
        </dd>
        <dt>Position</dt>
        <dd>
          {e.position} <span className="muted">(cursor {e.cursor})</span>
        </dd>
        <dt>Schema version</dt>
        <dd>{e.schemaVersion}</dd>
        <dt>Actor</dt>
        <dd>{m.actor ? <span title={m.actor}>{m.actorName ?? m.actor}</span> : '—'}</dd>
        <dt>Tenant</dt>
        <dd>{m.tenantId ?? '—'}</dd>
        <dt>Command</dt>
        <dd>{m.commandId ? <code>{m.commandId}</code> : '—'}</dd>
        <dt>Correlation</dt>
        <dd>
          {m.correlationId ? (
            <Link to={`/events?correlation=${encodeURIComponent(m.correlationId)}`}>
              <code>{m.correlationId}</code>
            </Link>
          ) : (
            '—'
          )}
        </dd>
        <dt>Causation</dt>
        <dd>{m.causationId ? <code>{m.causationId}</code> : '—'}</dd>
        <dt>Hash</dt>
        <dd>
          <code className="hash" data-testid="event-hash">
            {e.hash}
          </code>
        </dd>
        <dt>Previous hash</dt>
        <dd>
          <code className="hash">{e.prevHash}</code>
        </dd>
      </dl>
      <h2>Payload</h2>
      <Json value={e.payload} label="payload" />
      <h2>Metadata</h2>
      <Json
        value={{ commandId: m.commandId, correlationId: m.correlationId, causationId: m.causationId, actor: m.actor, tenantId: m.tenantId }}
        label="metadata"
      />
    </>
  );
}
