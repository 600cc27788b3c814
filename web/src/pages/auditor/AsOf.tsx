import { useEffect, useState, type FormEvent } from 'react';
import { EntityAsOfQuery } from '../../api/ops';
import { entityTypes, type EntityType } from '../../api/types';
import { useAccess } from '../../app/access';
import { useApiQuery } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { useUrlState } from '../../app/useUrlState';
import { Field } from '../../components/Field';
import { Json } from '../../components/Json';
import { Link } from '../../components/Link';
import { Empty, QueryView } from '../../components/states';
import { Time } from '../../components/Time';
import { streamOfEntity } from '../../lib/entities';
import { humanize } from '../../lib/format';
import { isoToLocalInput, localInputToISO } from '../../lib/urlState';

const spec = { type: 'string', id: 'string', time: 'string', cursor: 'string' } as const;

export function AsOfPage() {
  useTitle('Entity as of');
  const [state, setState] = useUrlState(spec);
  const [type, setType] = useState<EntityType>((entityTypes as string[]).includes(state.type) ? (state.type as EntityType) : 'SERVICE');
  const [id, setId] = useState(state.id);
  const [by, setBy] = useState<'time' | 'cursor'>(state.cursor ? 'cursor' : 'time');
  const [time, setTime] = useState(isoToLocalInput(state.time));
  const [cursor, setCursor] = useState(state.cursor);
  const [errors, setErrors] = useState<Record<string, string>>({});
  useEffect(() => {
    setId(state.id);
    setCursor(state.cursor);
    setTime(isoToLocalInput(state.time));
    if ((entityTypes as string[]).includes(state.type)) setType(state.type as EntityType);
  }, [state.id, state.cursor, state.time, state.type]);

  function submit(e: FormEvent) {
    e.preventDefault();
    const errs: Record<string, string> = {};
    if (id.trim() === '') errs.id = type === 'TEMPLATE' ? 'Give the template as name@version.' : 'Give the id.';
    const iso = localInputToISO(time);
    if (by === 'time' && !iso) errs.time = 'Choose a date and time.';
    if (by === 'cursor' && cursor.trim() === '') errs.cursor = 'Give an event cursor.';
    setErrors(errs);
    if (Object.keys(errs).length) return;
    setState(by === 'time' ? { type, id: id.trim(), time: iso, cursor: '' } : { type, id: id.trim(), cursor: cursor.trim(), time: '' });
  }

  const ready = state.id !== '' && (state.time !== '' || state.cursor !== '') && (entityTypes as string[]).includes(state.type);
  return (
    <section>
      <h1>Entity as of</h1>
      <p className="muted">The state of any entity at a past moment, computed by replaying its events up to it.</p>
      <form className="form row-form" onSubmit={submit} noValidate aria-label="choose entity and moment">
        <Field id="asof-type" label="Kind">
          {(a) => (
            <select {...a} value={type} onChange={(e) => setType(e.target.value as EntityType)}>
              {entityTypes.map((t) => (
                <option key={t} value={t}>
                  {humanize(t)}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field id="asof-id" label="Id" error={errors.id} required>
          {(a) => <input {...a} value={id} onChange={(e) => setId(e.target.value)} placeholder={type === 'TEMPLATE' ? 'name@version' : ''} />}
        </Field>
        <fieldset className="radios">
          <legend>At</legend>
          <label>
            <input type="radio" name="asof-by" checked={by === 'time'} onChange={() => setBy('time')} /> a time
          </label>
          <label>
            <input type="radio" name="asof-by" checked={by === 'cursor'} onChange={() => setBy('cursor')} /> an event cursor
          </label>
        </fieldset>
        {by === 'time' ? (
          <Field id="asof-time" label="Time" error={errors.time} required>
            {(a) => <input {...a} type="datetime-local" step={1} value={time} onChange={(e) => setTime(e.target.value)} />}
          </Field>
        ) : (
          <Field id="asof-cursor" label="Cursor" error={errors.cursor} required>
            {(a) => <input {...a} value={cursor} onChange={(e) => setCursor(e.target.value)} />}
          </Field>
        )}
        <button type="submit" className="primary">
          Show
        </button>
      </form>
      {ready ? <AsOfResult type={state.type as EntityType} id={state.id} time={state.time} cursor={state.cursor} /> : null}
    </section>
  );
}

function AsOfResult({ type, id, time, cursor }: { type: EntityType; id: string; time: string; cursor: string }) {
  const access = useAccess();
  const q = useApiQuery(EntityAsOfQuery, { entity: { type, id }, asOf: cursor ? { cursor } : { time } });
  return (
    <QueryView {...q} what="Replaying">
      {(d) => {
        const s = d.entityAsOf;
        return (
          <div data-testid="as-of">
            <h2>
              {humanize(s.type)} <code>{s.id}</code>
            </h2>
            {s.version === 0 ? (
              <Empty>It did not exist yet at that moment.</Empty>
            ) : (
              <>
                <p>
                  At version {s.version}, after the event at cursor{' '}
                  {access.page('event') ? <Link to={`/events/${encodeURIComponent(s.cursor)}`}>{s.cursor}</Link> : s.cursor}
                  {s.time ? (
                    <>
                      {' '}
                      recorded <Time value={s.time} absolute />
                    </>
                  ) : null}
                  .{' '}
                  {access.page('events') ? <Link to={`/events?stream=${encodeURIComponent(streamOfEntity(s.type, s.id))}`}>Its events</Link> : null}
                </p>
                <Json value={s.state} label="state" />
              </>
            )}
          </div>
        );
      }}
    </QueryView>
  );
}
