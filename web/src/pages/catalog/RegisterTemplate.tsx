import { useState, type FormEvent } from 'react';
import { RegisterTemplateMutation } from '../../api/ops';
import { useCommand } from '../../app/hooks';
import { useTitle } from '../../app/title';
import { Field } from '../../components/Field';
import { Link } from '../../components/Link';
import { Problems } from '../../components/states';
import { navigate } from '../../lib/router';
import { templatePath } from './Catalog';

export function RegisterTemplatePage() {
  useTitle('Register a descriptor');
  const [text, setText] = useState('');
  const [error, setError] = useState<string>();
  const [register, st] = useCommand(RegisterTemplateMutation);
  async function submit(e: FormEvent) {
    e.preventDefault();
    if (text.trim() === '') {
      setError('Paste a service descriptor, JSON or YAML.');
      return;
    }
    setError(undefined);
    const r = await register({ descriptor: text });
    if (r) navigate(templatePath(r.registerTemplate.template.name, r.registerTemplate.template.version));
  }
  return (
    <section>
      <p className="crumbs">
        <Link to="/catalog">Catalog</Link>
      </p>
      <h1>Register a descriptor</h1>
      <form className="form" onSubmit={submit} noValidate aria-label="register a descriptor">
        <Field
          id="descriptor"
          label="Service descriptor"
          hint="JSON or YAML, format cairn/v1. It is validated on registration; each problem names the field at fault."
          error={error}
          required
        >
          {(a) => (
            <textarea
              {...a}
              className="code"
              rows={20}
              spellCheck={false}
              value={text}
              onChange={(e) => setText(e.target.value)}
            />
          )}
        </Field>
        <div className="field">
          <label htmlFor="descriptor-file">Or load a file</label>
          <input
            id="descriptor-file"
            type="file"
            accept=".json,.yaml,.yml,application/json,text/yaml"
            onChange={async (e) => {
              const f = e.target.files?.[0];
              if (f) setText(await f.text());
            }}
          />
        </div>
        {st.problems ? <Problems problems={st.problems} title="The descriptor was not registered." /> : null}
        <div className="actions">
          <button type="submit" className="primary" disabled={st.running}>
            {st.running ? 'Registering…' : 'Register'}
          </button>
        </div>
      </form>
    </section>
  );
}
