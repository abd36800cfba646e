/**
 * The upload wizard: a file in (dropped, or chosen with the picker), a contract negotiated from its
 * sample, the plan shown for acceptance, the file streamed with its progress, then the commit. A
 * refused value (409 VALUE_NOT_STORABLE) is shown with its column, row and value.
 */
import { useState } from 'preact/hooks';
import type { components, paths } from '../../../src/client/generated/upload.ts';
import { api, data, networkError, sessionExpired, sessionHeaders, toApiError, type ApiError } from '../api.ts';
import { ErrorNotice } from '../errors.tsx';
import { Link } from '../link.tsx';
import { pathFor } from '../router.ts';
import { ActionError, TableBox, useAction } from './kit.tsx';
import { sampleOf, sendWithProgress } from './upload-transfer.ts';
import './views.css';

type Contract = components['schemas']['Contract'];
type WriteResult = components['schemas']['WriteResult'];
type CommitResult = components['schemas']['CommitResult'];
type ContractRequest = { destination: string; commit_mode?: 'append' | 'replace' };
type Replan = paths['/upload/v2/contracts/{contract_id}']['patch']['requestBody']['content']['application/json'];

type Step =
  | { at: 'choose' }
  | { at: 'plan'; contract: Contract }
  | { at: 'sending'; contract: Contract; sent: number; total: number }
  | { at: 'written'; contract: Contract; written: WriteResult }
  | { at: 'refused'; contract: Contract; error: ApiError; refusal: Refusal }
  | { at: 'committed'; contract: Contract; result: CommitResult };

/** What a 409 VALUE_NOT_STORABLE body says about the refused value. */
interface Refusal {
  file?: string;
  column?: string;
  row?: number;
  record?: number;
  value?: unknown;
  type?: string;
}

function refusalOf(error: ApiError, body: unknown): Refusal | undefined {
  if (error.code !== 'VALUE_NOT_STORABLE' || !body || typeof body !== 'object') return undefined;
  const b = body as Record<string, unknown>;
  const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return { file: str(b.file), column: str(b.column), row: num(b.line) ?? num(b.row), record: num(b.record), value: b.value, type: str(b.type) };
}

const DESTINATION = /^[A-Za-z_][\w]*\.[A-Za-z_][\w]*\.[A-Za-z_][\w]*$/;

export default function UploadView() {
  const [destination, setDestination] = useState('');
  const [commitMode, setCommitMode] = useState<'append' | 'replace'>('append');
  const [file, setFile] = useState<File>();
  const [step, setStep] = useState<Step>({ at: 'choose' });
  const [dragging, setDragging] = useState(false);
  const [message, setMessage] = useState('');
  // One key per wizard run: a retried commit returns the first snapshot instead of writing twice.
  const [commitKey, setCommitKey] = useState(newKey);
  const action = useAction();

  const negotiate = (event: Event) => {
    event.preventDefault();
    if (!file) return;
    void action.run(async () => {
      const contract: ContractRequest = { destination: destination.trim(), commit_mode: commitMode };
      const sample = await sampleOf(file);
      const created = await data(
        api.POST('/upload/v2/contracts', {
          body: { contract, sample: [] },
          bodySerializer: () => {
            const form = new FormData();
            form.append('contract', JSON.stringify(contract));
            form.append('sample', sample, file.name);
            return form;
          },
        }),
      );
      setStep({ at: 'plan', contract: created });
    });
  };

  const accept = (contract: Contract) =>
    action.run(async () => {
      const accepted = await data(
        api.PUT('/upload/v2/contracts/{contract_id}/accept', { params: { path: { contract_id: contract.contract_id } }, body: { schema_fingerprint: contract.schema_fingerprint } }),
      );
      setStep({ at: 'plan', contract: accepted });
    });

  const send = (contract: Contract) =>
    action.run(async () => {
      if (!file) return;
      setStep({ at: 'sending', contract, sent: 0, total: file.size });
      const headers = { ...sessionHeaders('POST'), 'x-file-name': file.name, 'content-type': file.type || 'application/octet-stream' };
      const url = `/upload/v2/contracts/${encodeURIComponent(contract.contract_id)}/data`;
      const answer = await sendWithProgress(url, file, headers, (sent, total) => setStep({ at: 'sending', contract, sent, total })).catch((e: unknown) => {
        setStep({ at: 'plan', contract });
        throw networkError(e);
      });
      if (answer.status === 401) sessionExpired();
      if (answer.status === 200) return setStep({ at: 'written', contract, written: answer.body as WriteResult });
      const error = toApiError(answer.status, answer.body);
      const refusal = refusalOf(error, answer.body);
      if (refusal) return setStep({ at: 'refused', contract, error, refusal });
      setStep({ at: 'plan', contract });
      throw error;
    });

  /** PATCH: retype or leave out columns, or change on_error; the whole contract is planned again. */
  const replan = (contract: Contract, change: Replan, then?: (replanned: Contract) => Promise<unknown>) =>
    action.run(async () => {
      const replanned = await data(api.PATCH('/upload/v2/contracts/{contract_id}', { params: { path: { contract_id: contract.contract_id } }, body: change }));
      setStep({ at: 'plan', contract: replanned });
      if (then) await then(replanned);
    });

  const commit = (contract: Contract) =>
    action.run(async () => {
      const result = await data(
        api.POST('/upload/v2/contracts/{contract_id}/commit', {
          params: { path: { contract_id: contract.contract_id }, header: { 'idempotency-key': commitKey } },
          body: message.trim() ? { message: message.trim() } : null,
        }),
      );
      setStep({ at: 'committed', contract, result });
    });

  /** Back to the start; an open contract is abandoned (its staged files deleted). A failed abandon is shown, the wizard starts over all the same. */
  const restart = () =>
    action.run(async () => {
      const open = step.at !== 'choose' && step.at !== 'committed' ? step.contract.contract_id : undefined;
      setStep({ at: 'choose' });
      setFile(undefined);
      setMessage('');
      setCommitKey(newKey());
      if (open) await data(api.DELETE('/upload/v2/contracts/{contract_id}', { params: { path: { contract_id: open } } }));
    });

  const onDrop = (event: DragEvent) => {
    event.preventDefault();
    setDragging(false);
    const dropped = event.dataTransfer?.files[0];
    if (dropped) setFile(dropped);
  };

  return (
    <section class="wizard">
      <h1>Upload a file</h1>
      <ol class="steps" aria-label="Steps">
        {(['Choose', 'Review the plan', 'Send', 'Commit'] as const).map((label, i) => (
          <li key={label} aria-current={stepIndex(step) === i ? 'step' : undefined}>
            {label}
          </li>
        ))}
      </ol>
      <ActionError action={action} />

      {step.at === 'choose' && (
        <form onSubmit={negotiate} class="stack">
          <label>
            Destination dataset <span class="muted">(workspace.collection.dataset)</span>
            <input
              name="destination"
              required
              pattern={DESTINATION.source}
              title="Three names joined by dots, e.g. sales.orders.daily"
              value={destination}
              onInput={(e) => setDestination(e.currentTarget.value)}
              placeholder="sales.orders.daily"
              autoComplete="off"
            />
          </label>
          <fieldset class="inline">
            <legend>When committed</legend>
            <label>
              <input type="radio" name="commit_mode" checked={commitMode === 'append'} onChange={() => setCommitMode('append')} /> add the rows
            </label>
            <label>
              <input type="radio" name="commit_mode" checked={commitMode === 'replace'} onChange={() => setCommitMode('replace')} /> replace the dataset's rows
            </label>
          </fieldset>
          <label
            class={`dropzone${dragging ? ' dragging' : ''}`}
            onDragOver={(e) => {
              e.preventDefault();
              setDragging(true);
            }}
            onDragLeave={() => setDragging(false)}
            onDrop={onDrop}
          >
            <span>{file ? `${file.name} (${formatBytes(file.size)})` : 'Drop a CSV, JSONL or Parquet file here, or choose one'}</span>
            <input type="file" name="file" accept=".csv,.tsv,.jsonl,.ndjson,.parquet" onChange={(e) => setFile(e.currentTarget.files?.[0])} />
          </label>
          <div>
            <button type="submit" class="primary" disabled={!file || action.busy}>
              {action.busy ? 'Checking the file…' : 'Check the file'}
            </button>
          </div>
        </form>
      )}

      {step.at !== 'choose' && <ContractSummary contract={step.contract} file={file} />}

      {step.at === 'plan' && (
        <>
          <Plan contract={step.contract} busy={action.busy} onReplan={(columns) => void replan(step.contract, { columns })} />
          <div class="buttons">
            {step.contract.state === 'proposed' && (
              <button type="button" class="primary" disabled={action.busy || blocked(step.contract)} onClick={() => void accept(step.contract)}>
                Accept the plan
              </button>
            )}
            {step.contract.state === 'accepted' && (
              <button type="button" class="primary" disabled={action.busy || blocked(step.contract)} onClick={() => void send(step.contract)}>
                Send {file?.name}
              </button>
            )}
            <button type="button" disabled={action.busy} onClick={() => void restart()}>
              Start over
            </button>
          </div>
          {blocked(step.contract) && <p class="muted">A blocking issue stops this upload; change the file or the destination and start over.</p>}
        </>
      )}

      {step.at === 'sending' && (
        <div class="stack">
          <label>
            Sending {file?.name}
            <progress max={step.total || 1} value={step.sent} />
          </label>
          <p role="status">
            {formatBytes(step.sent)} of {formatBytes(step.total)} ({step.total ? Math.floor((step.sent / step.total) * 100) : 0}%)
          </p>
        </div>
      )}

      {step.at === 'refused' && (
        <div class="stack">
          <ErrorNotice error={step.error} />
          <h2>The value that was refused</h2>
          <dl class="facts">
            <dt>Column</dt>
            <dd>{step.refusal.column ?? '—'}</dd>
            <dt>Row</dt>
            <dd>
              {step.refusal.row ?? '—'}
              {step.refusal.record !== undefined && <span class="muted"> (data record {step.refusal.record})</span>}
            </dd>
            <dt>Value</dt>
            <dd>
              <code>{JSON.stringify(step.refusal.value)}</code>
            </dd>
            <dt>Expected type</dt>
            <dd>{step.refusal.type ?? '—'}</dd>
          </dl>
          <p>Nothing was stored. Fix the value in the file and start over, or send the file again storing such values differently.</p>
          <div class="buttons">
            <button type="button" class="primary" disabled={action.busy} onClick={() => void restart()}>
              Start over
            </button>
            <button type="button" disabled={action.busy} onClick={() => void replan(step.contract, { columns: {}, on_error: 'null' }, (c) => send(c))}>
              Store NULL for such values and send again
            </button>
            <button type="button" disabled={action.busy} onClick={() => void replan(step.contract, { columns: {}, on_error: 'skip' }, (c) => send(c))}>
              Leave such records out and send again
            </button>
          </div>
        </div>
      )}

      {step.at === 'written' && (
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            void commit(step.contract);
          }}
        >
          <p role="status">
            Sent: {step.written.totals.rows} rows in {step.written.totals.files} file{step.written.totals.files === 1 ? '' : 's'} ({formatBytes(step.written.totals.bytes)} stored). Nothing is visible to readers until you commit.
          </p>
          <label>
            Commit message <span class="muted">(optional)</span>
            <input name="message" value={message} maxLength={2000} onInput={(e) => setMessage(e.currentTarget.value)} />
          </label>
          <div class="buttons">
            <button type="submit" class="primary" disabled={action.busy}>
              Commit
            </button>
            <button type="button" disabled={action.busy} onClick={() => void restart()}>
              Abandon
            </button>
          </div>
        </form>
      )}

      {step.at === 'committed' && <Committed result={step.result} onAgain={() => void restart()} />}
    </section>
  );
}

/** An Idempotency-Key (crypto.randomUUID needs a secure context; a console on plain http has getRandomValues only). */
const newKey = () => Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');

const stepIndex = (step: Step) => ({ choose: 0, plan: 1, sending: 2, refused: 2, written: 3, committed: 3 })[step.at];
const blocked = (contract: Contract) => contract.issues.some((i) => i.severity === 'blocking');

function ContractSummary({ contract, file }: { contract: Contract; file?: File }) {
  return (
    <p class="muted">
      {file?.name} → <strong>{contract.destination}</strong> · contract {contract.state} · schema from {contract.mode}
      {contract.dataset_exists ? '' : ' (a new dataset)'} · {contract.commit_mode === 'replace' ? 'replaces the rows' : 'adds the rows'}
    </p>
  );
}

/** Types a column can be stored as (the input takes any DuckDB type; these are offered). */
const TYPES = ['BOOLEAN', 'INTEGER', 'BIGINT', 'DOUBLE', 'DECIMAL(18,2)', 'VARCHAR', 'DATE', 'TIMESTAMP', 'TIMESTAMPTZ'];

type Edits = Replan['columns'];

function Plan({ contract, busy, onReplan }: { contract: Contract; busy: boolean; onReplan: (columns: Edits) => void }) {
  const [edits, setEdits] = useState<Edits>({});
  const open = contract.state === 'proposed' || contract.state === 'accepted';
  // The dataset declares its types: there a column can only be left out.
  const retypable = open && contract.mode !== 'dataset';
  const edit = (column: string, change: { type?: string; ignore?: boolean }) => setEdits({ ...edits, [column]: { ...edits[column], ...change } });
  const warnings = contract.issues.filter((i) => i.severity === 'warning');
  const blocking = contract.issues.filter((i) => i.severity === 'blocking');
  return (
    <div class="stack wide">
      <h2>Plan</h2>
      <TableBox label="Columns of the plan" columns={['Column', 'In the file', 'Stored as', 'Action', 'Nullable', 'Sample value', ...(open ? ['Load'] : [])]}>
          {contract.plan.map((entry) => (
            <tr key={entry.column}>
              <th scope="row">{entry.column}</th>
              <td>{entry.source_type ?? '—'}</td>
              <td>
                {retypable && entry.target_type !== null ? (
                  <input
                    class="type"
                    list="column-types"
                    aria-label={`Type of ${entry.column}`}
                    value={edits[entry.column]?.type ?? entry.target_type}
                    onInput={(e) => edit(entry.column, { type: e.currentTarget.value.trim() })}
                  />
                ) : (
                  (entry.target_type ?? '—')
                )}
              </td>
              <td>
                <span class={`tag action-${entry.action}`}>{entry.action}</span>
              </td>
              <td>{entry.nullable ? 'yes' : 'no'}</td>
              <td>
                <code>{sampleText(contract.values[entry.column])}</code>
              </td>
              {open && (
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Load ${entry.column}`}
                    checked={!(edits[entry.column]?.ignore ?? entry.action === 'ignored')}
                    onChange={(e) => edit(entry.column, { ignore: !e.currentTarget.checked })}
                  />
                </td>
              )}
            </tr>
          ))}
      </TableBox>
      <datalist id="column-types">
        {TYPES.map((t) => (
          <option key={t} value={t} />
        ))}
      </datalist>
      {open && (
        <div>
          <button
            type="button"
            disabled={busy || Object.keys(edits).length === 0}
            onClick={() => {
              onReplan(edits);
              setEdits({});
            }}
          >
            Apply column changes
          </button>
        </div>
      )}
      <h2>Issues</h2>
      {contract.issues.length === 0 && <p>No issues.</p>}
      {blocking.length > 0 && <IssueList title="Blocking" kind="blocking" issues={blocking} />}
      {warnings.length > 0 && <IssueList title="Warnings" kind="warning" issues={warnings} />}
    </div>
  );
}

function IssueList({ title, kind, issues }: { title: string; kind: 'blocking' | 'warning'; issues: Contract['issues'] }) {
  return (
    <section class={`issues ${kind}`} aria-label={`${title} issues`}>
      <h3>
        {title} ({issues.length})
      </h3>
      <ul>
        {issues.map((issue, i) => (
          <li key={i}>
            {issue.message} <code class="error-code">{issue.code}</code>
          </li>
        ))}
      </ul>
    </section>
  );
}

function Committed({ result, onAgain }: { result: CommitResult; onAgain: () => void }) {
  const [workspace, collection, dataset] = result.dataset.split('.');
  return (
    <div class="stack">
      <p role="status" class="success">
        Committed {result.rows_written} rows to {result.dataset} as snapshot {result.snapshot.snapshot_id} ({result.snapshot.total_records} rows in the dataset now).
      </p>
      <div class="buttons">
        <Link href={pathFor('/browse/:workspace/:collection/:dataset', { workspace, collection, dataset })}>Open {result.dataset}</Link>
        <button type="button" onClick={onAgain}>
          Upload another file
        </button>
      </div>
    </div>
  );
}

const sampleText = (value: unknown) => (value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value));

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}
