import { useState } from 'react';
import type { FieldModel } from '../lib/form';
import { Field } from './Field';

/** One generated field of the deploy form. */
export function VariableField({
  field,
  value,
  error,
  onChange,
}: {
  field: FieldModel;
  value: string | boolean;
  error?: string;
  onChange(v: string | boolean): void;
}) {
  const id = `var-${field.name}`;
  const description = field.description ? (/[.!?]$/.test(field.description) ? field.description : `${field.description}.`) : '';
  const hint = [description, field.rules.length ? `Must be ${field.rules.join('; ')}.` : ''].filter(Boolean).join(' ');
  const text = typeof value === 'string' ? value : '';
  if (field.kind === 'checkbox') {
    return (
      <div className={`field check${error ? ' invalid' : ''}`}>
        <label htmlFor={id}>
          <input
            id={id}
            type="checkbox"
            checked={value === true}
            aria-describedby={hint ? `${id}-hint` : undefined}
            onChange={(e) => onChange(e.target.checked)}
          />{' '}
          <code>{field.name}</code>
        </label>
        {error ? <p className="field-error">{error}</p> : null}
        {hint ? (
          <p className="hint" id={`${id}-hint`}>
            {hint}
          </p>
        ) : null}
      </div>
    );
  }
  return (
    <Field id={id} label={<code>{field.name}</code>} hint={hint || undefined} error={error} required={field.required}>
      {(a) => {
        switch (field.kind) {
          case 'select':
            return (
              <select {...a} value={text} onChange={(e) => onChange(e.target.value)}>
                <option value="">{field.required ? 'Choose…' : '(not set)'}</option>
                {field.options!.map((o) => (
                  <option key={o.value} value={o.value}>
                    {o.label}
                  </option>
                ))}
              </select>
            );
          case 'tristate':
            return (
              <select {...a} value={text} onChange={(e) => onChange(e.target.value)}>
                <option value="">(not set)</option>
                <option value="true">yes</option>
                <option value="false">no</option>
              </select>
            );
          case 'json':
            return <textarea {...a} className="code" rows={4} spellCheck={false} value={text} onChange={(e) => onChange(e.target.value)} />;
          case 'secret':
            return <SecretInput a={a} value={text} onChange={onChange} />;
          case 'number':
          case 'integer':
            return <input {...a} type="number" inputMode={field.kind === 'integer' ? 'numeric' : 'decimal'} {...field.input} value={text} onChange={(e) => onChange(e.target.value)} />;
          default:
            return <input {...a} type="text" {...field.input} value={text} onChange={(e) => onChange(e.target.value)} />;
        }
      }}
    </Field>
  );
}

function SecretInput({ a, value, onChange }: { a: { id: string }; value: string; onChange(v: string): void }) {
  const [shown, setShown] = useState(false);
  return (
    <span className="secret-input">
      <input {...a} type={shown ? 'text' : 'password'} autoComplete="new-password" spellCheck={false} value={value} onChange={(e) => onChange(e.target.value)} />
      <button type="button" aria-pressed={shown} aria-controls={a.id} onClick={() => setShown((s) => !s)}>
        {shown ? 'Hide' : 'Show'}
      </button>
    </span>
  );
}
