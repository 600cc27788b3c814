import { useId, useRef, type ReactNode } from 'react';

/**
 * A button that asks first, in a modal dialog (focus moves into it, Escape
 * cancels, focus returns to the button).
 */
export function ConfirmButton({
  label,
  title,
  children,
  confirmLabel,
  onConfirm,
  danger,
  disabled,
}: {
  label: string;
  title: string;
  children: ReactNode;
  confirmLabel?: string;
  onConfirm: () => void;
  danger?: boolean;
  disabled?: boolean;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  return (
    <>
      <button type="button" className={danger ? 'danger' : undefined} disabled={disabled} onClick={() => dialog.current?.showModal()}>
        {label}
      </button>
      <dialog ref={dialog} aria-labelledby={titleId} className="confirm">
        <form
          method="dialog"
          onSubmit={(e) => {
            const submitter = (e.nativeEvent as SubmitEvent).submitter as HTMLButtonElement | null;
            if (submitter?.value === 'confirm') onConfirm();
          }}
        >
          <h2 id={titleId}>{title}</h2>
          <div>{children}</div>
          <div className="actions">
            <button value="cancel" autoFocus>
              Cancel
            </button>
            <button value="confirm" className={danger ? 'danger' : 'primary'}>
              {confirmLabel ?? label}
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}
