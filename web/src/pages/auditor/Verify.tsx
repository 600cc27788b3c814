import { VerifyChainQuery } from '../../api/ops';
import type { ChainVerification } from '../../api/types';
import { useApiQuery } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { useUrlState } from '../../app/useUrlState';
import { Link } from '../../components/Link';
import { SearchBox } from '../../components/SearchBox';
import { QueryView } from '../../components/states';

const spec = { stream: 'string', run: 'int' } as const;

export function VerifyPage() {
  useTitle('Chain verification');
  const [state, setState] = useUrlState(spec);
  return (
    <section>
      <h1>Chain verification</h1>
      <p className="muted">
        Every stream is a hash chain: each event's hash covers its content and the previous event's hash. Verification recomputes them and names the
        first event that does not match.
      </p>
      <form className="filters" aria-label="verify" onSubmit={(e) => e.preventDefault()}>
        <SearchBox id="verify-stream" label="Stream id" placeholder="every stream" value={state.stream} onApply={(v) => setState({ stream: v, run: undefined }, { replace: true })} />
        <button type="button" className="primary" onClick={() => setState({ run: (state.run ?? 0) + 1 }, { replace: true })}>
          {state.run ? 'Verify again' : 'Verify'}
        </button>
      </form>
      {state.run ? <Result key={`${state.stream}/${state.run}`} stream={state.stream} /> : null}
    </section>
  );
}

function Result({ stream }: { stream: string }) {
  // Each run asks the server again: the page is mounted anew per run (see the key below).
  const q = useApiQuery(VerifyChainQuery, { streamId: stream || undefined }, { policy: 'network-only' });
  return (
    <QueryView {...q} what="Verifying">
      {(d) => <Verdict v={d.verifyChain} />}
    </QueryView>
  );
}

function Verdict({ v }: { v: ChainVerification }) {
  return (
    <div className={`notice ${v.ok ? 'ok' : 'error'}`} role="status" data-testid="verification">
      <p>
        <strong>{v.ok ? 'The history is intact.' : 'The history was altered.'}</strong> {v.events} events in {v.streams} stream
        {v.streams === 1 ? '' : 's'} checked.
      </p>
      {v.firstBreak ? (
        <p>
          First break: stream <code>{v.firstBreak.streamId}</code> at version {v.firstBreak.version} (position {v.firstBreak.position}):{' '}
          {v.firstBreak.reason}.
        </p>
      ) : null}
      {v.breaks.length > 1 ? (
        <ul>
          {v.breaks.map((b) => (
            <li key={b.streamId}>
              <Link to={`/events?stream=${encodeURIComponent(b.streamId)}`}>
                <code>{b.streamId}</code>
              </Link>{' '}
              version {b.version}: {b.reason}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
