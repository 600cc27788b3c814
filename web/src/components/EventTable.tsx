import type { Event } from '../api/types';
import { Link } from './Link';
import { Time } from './Time';

/** Events, each linking to its page (payload, metadata, hash). */
export function EventTable({ events, busy, showStream = true }: { events: Event[]; busy?: boolean; showStream?: boolean }) {
  return (
    <table aria-busy={busy} data-testid="events">
      <thead>
        <tr>
          <th scope="col">Time</th>
          <th scope="col">Event</th>
          {showStream ? <th scope="col">Stream</th> : null}
          <th scope="col">Version</th>
          <th scope="col">Actor</th>
          <th scope="col">Correlation</th>
        </tr>
      </thead>
      <tbody>
        {events.map((e) => (
          <tr key={e.cursor}>
            <td>
              <Time value={e.time} absolute />
            </td>
            <td>
              <Link to={`/events/${encodeURIComponent(e.cursor)}`}>{e.type}</Link>
            </td>
            {showStream ? (
              <td>
                <code>{e.streamId}</code>
              </td>
            ) : null}
            <td>{e.version}</td>
            <td>{e.metadata.actor ? <span title={e.metadata.actor}>{e.metadata.actorName ?? e.metadata.actor}</span> : <span className="muted">—</span>}</td>
            <td className="clip">{e.metadata.correlationId ? <code>{e.metadata.correlationId}</code> : <span className="muted">—</span>}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
