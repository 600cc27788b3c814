import { useDeferredValue, useState, type FormEvent } from 'react';
import { NodeNamesQuery, SubmitJobMutation } from '../../api/ops';
import { useAccess } from '../../app/access';
import { useApiQuery, useCommand } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { useUrlState } from '../../app/useUrlState';
import { Field } from '../../components/Field';
import { Link } from '../../components/Link';
import { LocationSelect } from '../../components/LocationSelect';
import { Problems } from '../../components/states';
import { humanize } from '../../lib/format';
import { emptyJobForm, jobInput, type JobForm } from '../../lib/jobForm';
import { navigate } from '../../lib/router';

const spec = { node: 'string', selector: 'string', location: 'string' } as const;

export function RunJobPage() {
  useTitle('Run a job');
  const [initial] = useUrlState(spec);
  const [form, setForm] = useState<JobForm>(() => ({
    ...emptyJobForm,
    nodeId: initial.node,
    selector: initial.selector,
    location: initial.location,
    targetBy: (initial.selector || initial.location) && !initial.node ? 'selector' : 'node',
  }));
  const [errors, setErrors] = useState<Partial<Record<keyof JobForm, string>>>({});
  const [submit, st] = useCommand(SubmitJobMutation);
  const set = <K extends keyof JobForm>(k: K, v: JobForm[K]) => setForm((f) => ({ ...f, [k]: v }));

  async function onSubmit(e: FormEvent) {
    e.preventDefault();
    const r = jobInput(form);
    setErrors(r.errors);
    if (!r.input) {
      const first = Object.keys(r.errors)[0];
      if (first) document.getElementById(`job-${first}`)?.focus();
      return;
    }
    const res = await submit(r.input);
    if (res) navigate(`/jobs/${encodeURIComponent(res.submitJob.job.id)}`);
  }

  return (
    <section>
      <p className="crumbs">
        <Link to="/jobs">Jobs</Link>
      </p>
      <h1>Run a job</h1>
      <form className="form" onSubmit={onSubmit} noValidate aria-label="run a job">
        <fieldset>
          <legend>Where</legend>
          <div className="radios" role="radiogroup" aria-label="target">
            <label>
              <input type="radio" name="targetBy" checked={form.targetBy === 'node'} onChange={() => set('targetBy', 'node')} /> One node
            </label>
            <label>
              <input type="radio" name="targetBy" checked={form.targetBy === 'selector'} onChange={() => set('targetBy', 'selector')} /> Nodes by location or labels
            </label>
            <label>
              <input type="radio" name="targetBy" checked={form.targetBy === 'every'} onChange={() => set('targetBy', 'every')} /> Every node
            </label>
          </div>
          {form.targetBy === 'node' ? (
            <NodeSelect value={form.nodeId} error={errors.nodeId} onChange={(v) => set('nodeId', v)} />
          ) : (
            <>
              {form.targetBy === 'selector' ? (
                <>
                  <LocationSelect id="job-location" value={form.location} onChange={(v) => set('location', v)} />
                  <Field
                    id="job-selector"
                    label="Label selector"
                    hint="role=web, zone in (a,b), zone notin (c), gpu (has the label), !gpu (has not); comma separated, all must hold"
                    error={errors.selector}
                  >
                    {(a) => <input {...a} value={form.selector} spellCheck={false} onChange={(e) => set('selector', e.target.value)} />}
                  </Field>
                </>
              ) : null}
              <div className="radios" role="radiogroup" aria-label="how many nodes">
                <label>
                  <input type="radio" name="mode" checked={form.mode === 'ANY'} onChange={() => set('mode', 'ANY')} /> Any one of them
                </label>
                <label>
                  <input type="radio" name="mode" checked={form.mode === 'ALL'} onChange={() => set('mode', 'ALL')} /> All of them
                </label>
              </div>
              {form.mode === 'ALL' ? (
                <Field id="job-maxParallel" label="At most at once" hint="0: no limit" error={errors.maxParallel}>
                  {(a) => <input {...a} type="number" min={0} value={form.maxParallel} onChange={(e) => set('maxParallel', e.target.value)} />}
                </Field>
              ) : null}
            </>
          )}
        </fieldset>
        <fieldset>
          <legend>What</legend>
          <div className="radios" role="radiogroup" aria-label="kind of job">
            {(['SCRIPT', 'EXEC', 'ACTION'] as const).map((k) => (
              <label key={k}>
                <input type="radio" name="kind" checked={form.kind === k} onChange={() => set('kind', k)} />{' '}
                {k === 'EXEC' ? 'program' : humanize(k)}
              </label>
            ))}
          </div>
          {form.kind === 'SCRIPT' ? (
            <>
              <Field id="job-interpreter" label="Interpreter" error={errors.interpreter} required>
                {(a) => (
                  <select {...a} value={form.interpreter} onChange={(e) => set('interpreter', e.target.value)}>
                    <option value="sh">sh</option>
                    <option value="bash">bash</option>
                    <option value="python3">python3</option>
                  </select>
                )}
              </Field>
              <Field id="job-body" label="Script" error={errors.body} required>
                {(a) => <textarea {...a} className="code" rows={8} spellCheck={false} value={form.body} onChange={(e) => set('body', e.target.value)} />}
              </Field>
            </>
          ) : null}
          {form.kind === 'EXEC' ? (
            <>
              <Field id="job-argv" label="Program and arguments" hint="One per line, the program first; no shell is involved." error={errors.argv} required>
                {(a) => <textarea {...a} className="code" rows={5} spellCheck={false} value={form.argv} onChange={(e) => set('argv', e.target.value)} />}
              </Field>
              <Field id="job-workdir" label="Working directory">
                {(a) => <input {...a} value={form.workdir} onChange={(e) => set('workdir', e.target.value)} />}
              </Field>
            </>
          ) : null}
          {form.kind === 'ACTION' ? (
            <>
              <Field id="job-action" label="Action" hint="A SAL action such as system.info or files.write" error={errors.action} required>
                {(a) => <input {...a} value={form.action} onChange={(e) => set('action', e.target.value)} />}
              </Field>
              <Field id="job-args" label="Arguments (JSON object)" error={errors.args}>
                {(a) => <textarea {...a} className="code" rows={5} spellCheck={false} value={form.args} onChange={(e) => set('args', e.target.value)} />}
              </Field>
            </>
          ) : null}
          <Field id="job-timeoutSeconds" label="Timeout (seconds)" error={errors.timeoutSeconds}>
            {(a) => <input {...a} type="number" min={1} value={form.timeoutSeconds} onChange={(e) => set('timeoutSeconds', e.target.value)} />}
          </Field>
        </fieldset>
        {st.problems ? <Problems problems={st.problems} title="The job was not submitted." /> : null}
        <div className="actions">
          <button type="submit" className="primary" disabled={st.running}>
            {st.running ? 'Submitting…' : 'Run'}
          </button>
        </div>
      </form>
    </section>
  );
}

function NodeSelect(props: { value: string; error?: string; onChange(v: string): void }) {
  const access = useAccess();
  if (!access.query('nodes')) {
    return (
      <Field id="job-nodeId" label="Node id" error={props.error} required>
        {(a) => <input {...a} value={props.value} spellCheck={false} onChange={(e) => props.onChange(e.target.value)} />}
      </Field>
    );
  }
  return <NodeList {...props} />;
}

// nodeChoices is how many nodes the list offers at once: an installation of
// thousands is searched by hostname, not scrolled.
const nodeChoices = 100;

function NodeList({ value, error, onChange }: { value: string; error?: string; onChange(v: string): void }) {
  const [find, setFind] = useState('');
  const term = useDeferredValue(find.trim());
  const q = useApiQuery(NodeNamesQuery, { first: nodeChoices, filter: term ? { hostname: term } : undefined });
  const nodes = q.data?.nodes.edges.map((e) => e.node).filter((n) => n.status !== 'DECOMMISSIONED') ?? [];
  const more = q.data?.nodes.pageInfo.hasNextPage ?? false;
  return (
    <>
      <Field id="job-nodeFind" label="Find a node" hint={more ? `The first ${nodeChoices} matches are listed: type more of the hostname to narrow them.` : 'Part of its hostname.'}>
        {(a) => <input {...a} type="search" value={find} spellCheck={false} onChange={(e) => setFind(e.target.value)} />}
      </Field>
      <Field id="job-nodeId" label="Node" error={error ?? (q.problems ? 'The nodes could not be listed.' : undefined)} required>
        {(a) => (
          <select {...a} value={value} onChange={(e) => onChange(e.target.value)} aria-busy={q.fetching}>
            <option value="">{q.fetching && !q.data ? 'Loading nodes…' : nodes.length ? 'Choose a node' : 'No node matches'}</option>
            {value && !nodes.some((n) => n.id === value) ? <option value={value}>{value}</option> : null}
            {nodes.map((n) => (
              <option key={n.id} value={n.id}>
                {n.hostname} ({humanize(n.status)})
              </option>
            ))}
          </select>
        )}
      </Field>
    </>
  );
}
