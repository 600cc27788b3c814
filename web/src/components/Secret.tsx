import { useState } from 'react';

/** A secret the server shows once: displayed with a copy button and a warning. */
export function ShownOnce({ label, secret, onDone }: { label: string; secret: string; onDone(): void }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="notice secret" role="alert">
      <p>
        <strong>{label}</strong> It is shown only now: copy it and keep it safe.
      </p>
      <p>
        <code className="secret-value" data-testid="secret">
          {secret}
        </code>
      </p>
      <div className="actions">
        <button
          type="button"
          onClick={() => {
            void navigator.clipboard?.writeText(secret).then(() => setCopied(true));
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
        <button type="button" onClick={onDone}>
          I have kept it
        </button>
      </div>
    </div>
  );
}
