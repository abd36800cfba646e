/** Small pieces the upload and govern views share: an action with its error, a two-step confirm, a countdown. */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ErrorNotice } from '../errors.tsx';

export interface Action {
  /** Runs `work`, keeping its failure for <ErrorNotice>; resolves true when it succeeded. */
  run: (work: () => Promise<unknown>) => Promise<boolean>;
  busy: boolean;
  error: unknown;
  clear: () => void;
}

export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = async (work: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await work();
      return true;
    } catch (e) {
      setError(e);
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, error, clear: () => setError(undefined) };
}

/** The action's error, dismissible. */
export const ActionError = ({ action }: { action: Action }) => <ErrorNotice error={action.error} onDismiss={action.clear} />;

/** A button that asks once more before `onConfirm` (no modal: the question replaces the button; Escape cancels). */
export function ConfirmButton({ label, question, onConfirm, disabled }: { label: string; question: string; onConfirm: () => void; disabled?: boolean }) {
  const [asking, setAsking] = useState(false);
  if (!asking)
    return (
      <button type="button" class="danger" disabled={disabled} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  return (
    <span class="confirm" role="group" aria-label={question} onKeyDown={(e) => e.key === 'Escape' && setAsking(false)}>
      <span>{question}</span>{' '}
      <button
        type="button"
        class="danger"
        // The question replaced the button that had focus; keep keyboard users on it.
        ref={(el) => el?.focus()}
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        Yes, {label.toLowerCase()}
      </button>{' '}
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

/** "23 h 59 min" until `until`, re-rendered every `stepMs`; "now" once it has passed. */
export function Countdown({ until, stepMs = 30_000 }: { until: string; stepMs?: number }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), stepMs);
    return () => clearInterval(timer);
  }, [stepMs]);
  const left = Date.parse(until) - now;
  return <time dateTime={until} title={new Date(until).toLocaleString()}>{left <= 0 ? 'now' : formatSpan(left)}</time>;
}

/** Whole days, hours and minutes of `ms`, rounded down (a countdown never promises time that is not there). */
export function formatSpan(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return 'under a minute';
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  const parts = [days && `${days} d`, hours && `${hours} h`, `${minutes % 60} min`].filter(Boolean);
  return parts.join(' ');
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

/**
 * A table that scrolls sideways on narrow screens instead of widening the page. `columns` are the
 * header cells ('' is a row-actions column, named for screen readers only); `empty`, when given, is
 * the one row shown instead of `children`.
 */
export function TableBox({ label, columns, empty, children }: { label: string; columns: string[]; empty?: string | false; children: ComponentChildren }) {
  return (
    <div class="scroll" role="region" aria-label={label} tabIndex={0}>
      <table>
        <thead>
          <tr>
            {columns.map((c, i) => (
              <th scope="col" key={i}>
                {c || <span class="sr-only">Actions</span>}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {empty ? (
            <tr>
              <td colSpan={columns.length}>{empty}</td>
            </tr>
          ) : (
            children
          )}
        </tbody>
      </table>
    </div>
  );
}

/** A labelled select of fixed choices: [value, text] pairs; `hideLabel` names it for screen readers only (in a table row). */
export function Choice<T extends string>({ label, value, choices, onChange, hideLabel, disabled }: { label: string; value: T; choices: readonly (readonly [T, string])[]; onChange: (value: T) => void; hideLabel?: boolean; disabled?: boolean }) {
  const select = (
    <select aria-label={hideLabel ? label : undefined} value={value} disabled={disabled} onChange={(e) => onChange(e.currentTarget.value as T)}>
      {choices.map(([v, text]) => (
        <option key={v} value={v}>
          {text}
        </option>
      ))}
    </select>
  );
  return hideLabel ? (
    select
  ) : (
    <label>
      {label}
      {select}
    </label>
  );
}

/** A one-field form (label, input, button): `submit` gets the trimmed value; the field is cleared when it resolves true. */
export function OneFieldForm({ label, name, button, placeholder, disabled, submit, children }: { label: string; name: string; button: string; placeholder?: string; disabled?: boolean; submit: (value: string) => Promise<boolean> | void; children?: ComponentChildren }) {
  const [value, setValue] = useState('');
  return (
    <form
      class="inline-form"
      onSubmit={(e) => {
        e.preventDefault();
        void Promise.resolve(submit(value.trim())).then((done) => done && setValue(''));
      }}
    >
      <label>
        {label}
        <input name={name} required value={value} placeholder={placeholder} onInput={(e) => setValue(e.currentTarget.value)} autoComplete="off" />
      </label>
      <button type="submit" class="primary" disabled={disabled}>
        {button}
      </button>
      {children}
    </form>
  );
}

/** A browser download of text the API answered (the link never carries the session, the fetch does). */
export function saveText(text: string, fileName: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = fileName;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
