import { useEffect, useState } from 'react';

/**
 * A text filter applied on Enter or when leaving the field, so that typing
 * does not add a history entry per key.
 */
export function SearchBox({
  id,
  label,
  value,
  onApply,
  placeholder,
  error,
}: {
  id: string;
  label: string;
  value: string;
  onApply(v: string): void;
  placeholder?: string;
  error?: string;
}) {
  const [text, setText] = useState(value);
  useEffect(() => setText(value), [value]);
  const apply = () => {
    if (text.trim() !== value) onApply(text.trim());
  };
  return (
    <div className={`field inline${error ? ' invalid' : ''}`}>
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type="search"
        value={text}
        placeholder={placeholder}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
        onChange={(e) => setText(e.target.value)}
        onBlur={apply}
        onKeyDown={(e) => {
          if (e.key === 'Enter') {
            e.preventDefault();
            apply();
          }
        }}
      />
      {error ? (
        <p className="field-error" id={`${id}-error`}>
          {error}
        </p>
      ) : null}
    </div>
  );
}
