import { useEffect, useId, useRef, useState, type ButtonHTMLAttributes, type InputHTMLAttributes, type ReactNode, type SelectHTMLAttributes, type TextareaHTMLAttributes } from 'react';
import { ApiError, messageOf } from '../api/client';

type ButtonProps = ButtonHTMLAttributes<HTMLButtonElement> & { variant?: 'primary' | 'danger' | 'ghost' | 'default'; busy?: boolean; small?: boolean };

/** A button; `busy` disables it and says so (pending requests). */
export function Button({ variant = 'default', busy, small, className, children, disabled, type = 'button', ...rest }: ButtonProps) {
  return (
    <button type={type} className={['btn', `btn-${variant}`, small ? 'btn-small' : '', className ?? ''].join(' ').trim()} disabled={disabled || busy} aria-busy={busy || undefined} {...rest}>
      {busy ? <span className="spinner" aria-hidden="true" /> : null}
      {children}
    </button>
  );
}

interface FieldProps {
  label: ReactNode;
  /** The API's name for the field (`body.name`, `name`): an ApiError naming it is shown here. */
  name?: string;
  error?: unknown;
  hint?: ReactNode;
  children: (props: { id: string; 'aria-invalid'?: boolean; 'aria-describedby'?: string }) => ReactNode;
}

/** Does the error name this field? The API says `body.env.FOO`, `name`, `query.since`... */
export function errorNames(err: unknown, name: string | undefined): boolean {
  if (!name || !(err instanceof ApiError) || !err.field) return false;
  const f = err.field.replace(/^(body|query|params)\./, '');
  return f === name || f.startsWith(`${name}.`) || f.startsWith(`${name}[`);
}

/** A labelled form field; shows the API's error when it names this field. */
export function Field({ label, name, error, hint, children }: FieldProps) {
  const id = useId();
  const mine = errorNames(error, name);
  const described = mine ? `${id}-err` : hint ? `${id}-hint` : undefined;
  return (
    <div className={`field${mine ? ' field-invalid' : ''}`}>
      <label htmlFor={id}>{label}</label>
      {children({ id, ...(mine ? { 'aria-invalid': true } : {}), ...(described ? { 'aria-describedby': described } : {}) })}
      {mine ? (
        <p className="field-error" id={`${id}-err`} role="alert">
          {messageOf(error)}
        </p>
      ) : hint ? (
        <p className="field-hint" id={`${id}-hint`}>
          {hint}
        </p>
      ) : null}
    </div>
  );
}

export const Input = (p: InputHTMLAttributes<HTMLInputElement>) => <input className="input" {...p} />;
export const Select = (p: SelectHTMLAttributes<HTMLSelectElement>) => <select className="input" {...p} />;
export const TextArea = (p: TextareaHTMLAttributes<HTMLTextAreaElement>) => <textarea className="input" {...p} />;

/**
 * A failed request, in the server's words, with the field it names. Nothing when there is no error,
 * nor when it names one of `fields` (a form's Fields, which show it under the field themselves).
 */
export function ErrorNotice({ error, title, fields }: { error: unknown; title?: string; fields?: readonly string[] }) {
  if (!error || fields?.some((f) => errorNames(error, f))) return null;
  const e = error instanceof ApiError ? error : null;
  return (
    <div className="notice notice-error" role="alert">
      {title ? <strong>{title}: </strong> : null}
      {messageOf(error)}
      {e?.field ? <span className="muted"> (field: {e.field})</span> : null}
    </div>
  );
}

export function Notice({ kind = 'info', children }: { kind?: 'info' | 'warn' | 'ok'; children: ReactNode }) {
  return <div className={`notice notice-${kind}`}>{children}</div>;
}

interface ConfirmProps {
  open: boolean;
  title: string;
  /** What will happen, in full (what is deleted or replaced). */
  children: ReactNode;
  confirmLabel: string;
  /** When set, the user must type this text (a project's name) to confirm. */
  typeToConfirm?: string;
  danger?: boolean;
  busy?: boolean;
  error?: unknown;
  onConfirm(): void;
  onCancel(): void;
}

/**
 * A modal confirmation for destructive actions (a native <dialog>: focus stays inside, Escape
 * cancels). The confirm button is focused last so Enter never confirms by accident.
 */
export function ConfirmDialog({ open, title, children, confirmLabel, typeToConfirm, danger = true, busy, error, onConfirm, onCancel }: ConfirmProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const [typed, setTyped] = useState('');
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) {
      setTyped('');
      d.showModal();
    } else if (!open && d.open) d.close();
  }, [open]);
  const ok = !typeToConfirm || typed === typeToConfirm;
  return (
    <dialog ref={ref} className="dialog" onCancel={(e) => (e.preventDefault(), onCancel())} aria-labelledby={titleId}>
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          if (ok && !busy) onConfirm();
        }}
      >
        <h2 id={titleId}>{title}</h2>
        <div className="dialog-body">{children}</div>
        {typeToConfirm ? (
          <Field label={<>Type <code>{typeToConfirm}</code> to confirm</>}>
            {(p) => <Input {...p} value={typed} onChange={(e) => setTyped(e.target.value)} autoComplete="off" autoFocus />}
          </Field>
        ) : null}
        <ErrorNotice error={error} />
        <div className="dialog-actions">
          <Button onClick={onCancel} autoFocus={!typeToConfirm}>
            Cancel
          </Button>
          <Button type="submit" variant={danger ? 'danger' : 'primary'} disabled={!ok} busy={busy}>
            {confirmLabel}
          </Button>
        </div>
      </form>
    </dialog>
  );
}

const STATUS_KIND: Record<string, string> = {
  ready: 'ok', running: 'ok', succeeded: 'ok', success: 'ok', issued: 'ok', verified: 'ok', active: 'ok', connected: 'ok', applied: 'ok', completed: 'ok',
  failed: 'bad', error: 'bad', crashed: 'bad', cancelled: 'muted', superseded: 'muted', stopped: 'muted', none: 'muted', disabled: 'muted', expired: 'muted', revoked: 'muted', sleeping: 'muted',
  uploading: 'busy', server_error: 'bad', queued: 'busy', building: 'busy', deploying: 'busy', pending: 'busy', starting: 'busy', running_backup: 'busy', staging: 'busy', staged: 'warn', applying: 'busy', verifying: 'busy',
  degraded: 'warn', delivered: 'ok',
};

/** A status word with its colour (and the word itself, so colour is never the only signal). */
export function StatusBadge({ status }: { status: string | null | undefined }) {
  const s = status ?? 'none';
  return <span className={`badge badge-${STATUS_KIND[s] ?? 'muted'}`}>{s.replace(/_/g, ' ')}</span>;
}

export function Spinner({ label = 'Loading' }: { label?: string }) {
  return (
    <span className="loading" role="status">
      <span className="spinner" aria-hidden="true" /> {label}…
    </span>
  );
}

/** A progress bar with its figure in words for screen readers. */
export function Progress({ value, max = 1, label }: { value: number; max?: number; label?: string }) {
  const pct = max > 0 ? Math.max(0, Math.min(100, (value / max) * 100)) : 0;
  return (
    <div className="progress" role="progressbar" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(pct)} aria-label={label}>
      <div className="progress-bar" style={{ width: `${pct}%` }} />
    </div>
  );
}

export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p className="empty-title">{title}</p>
      {children}
    </div>
  );
}

/** "3 minutes ago", with the exact time on hover. */
export function TimeAgo({ at }: { at: string | null | undefined }) {
  if (!at) return <span className="muted">–</span>;
  const t = Date.parse(at);
  const s = Math.round((Date.now() - t) / 1000);
  const a = Math.abs(s);
  const span = a < 3600 ? `${Math.round(a / 60)} min` : `${Math.round(a / 3600)} h`;
  const rel = a < 60 ? 'just now' : a >= 86400 ? new Date(t).toLocaleDateString() : s > 0 ? `${span} ago` : `in ${span}`;
  return (
    <time dateTime={at} title={new Date(t).toLocaleString()}>
      {rel}
    </time>
  );
}

function copyWithSelection(text: string): boolean {
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.appendChild(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <Button
      small
      variant="ghost"
      onClick={() => {
        // navigator.clipboard exists only in secure contexts (https, localhost); elsewhere the old way.
        const copied = navigator.clipboard
          ? navigator.clipboard.writeText(text).then(() => true, () => false)
          : Promise.resolve(copyWithSelection(text));
        void copied.then((ok) => {
          setDone(ok);
          if (ok) setTimeout(() => setDone(false), 1500);
          else window.prompt('Copy this:', text);
        });
      }}
    >
      {done ? 'Copied' : label}
    </Button>
  );
}

export function formatBytes(n: number | null | undefined): string {
  if (n == null) return '–';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 && i > 0 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}
