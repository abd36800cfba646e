/**
 * Query: the SQL editor (checked as one types), `:name` parameters in a form (saved variables fill
 * them), run as a job with live status, elapsed time and cancel; paged results; downloads; recent queries.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, type Job, type ResultsPage } from '../api.ts';
import { listWorkspaces } from '../catalog.ts';
import { createSqlEditor, type SqlEditor } from '../editor.ts';
import { ErrorNotice } from '../errors.tsx';
import { cancelJob, checkSql, downloadUrl, jobStatus, listVariables, parseParam, placeholders, recentJobs, resultsPage, saveVariable, submitJob, type ParamValue } from '../jobs.ts';
import type { ViewProps } from '../routes.ts';
import { useApi } from '../use-api.ts';
import { formatCell } from './dataset.tsx';

const PAGE_ROWS = 50;
/** The draft survives a sign-in in between (session storage of this tab: SQL text only). */
const DRAFT_KEY = 'lakeport.console.sql';

export default function Query({ query }: ViewProps) {
  const initial = query.get('sql') ?? sessionStorage.getItem(DRAFT_KEY) ?? '';
  const [sqlText, setSqlText] = useState(initial);
  const [values, setValues] = useState<Record<string, string>>({});
  const [job, setJob] = useState<Job>();
  const [error, setError] = useState<unknown>();
  const [page, setPage] = useState<ResultsPage>();
  const [now, setNow] = useState(Date.now());
  const variables = useApi(listVariables, []);
  const recent = useApi(recentJobs, [job?.status === 'succeeded' || job?.status === 'failed' || job?.status === 'cancelled' ? job.execution_id : '']);
  const workspaces = useApi(listWorkspaces, []);
  const editorHost = useRef<HTMLDivElement>(null);
  const editor = useRef<SqlEditor | undefined>(undefined);
  const names = useMemo(() => placeholders(sqlText), [sqlText]);
  const saved = useMemo(() => new Map((variables.value ?? []).map((v) => [v.name, v])), [variables.value]);

  // Parameters: the form's values; a name left empty falls back to the saved variable on the server.
  const parameters = (): Record<string, ParamValue> =>
    Object.fromEntries(names.filter((n) => (values[n] ?? '') !== '').map((n) => [n, parseParam(values[n])]));
  const latest = useRef({ parameters, run: () => undefined as void });
  latest.current.parameters = parameters;

  const run = async () => {
    const text = editor.current?.view.state.doc.toString() ?? sqlText;
    if (!text.trim()) return;
    setError(undefined);
    setPage(undefined);
    try {
      const submitted = await submitJob(text, latest.current.parameters());
      let current = await jobStatus(submitted.execution_id);
      setJob(current);
      while (current.in_progress) {
        current = await jobStatus(submitted.execution_id, 2);
        setJob(current);
      }
      if (current.status === 'succeeded') setPage(await resultsPage(current.execution_id, 0, PAGE_ROWS));
    } catch (e) {
      setError(e);
    }
  };
  latest.current.run = () => void run();

  useEffect(() => {
    if (!editorHost.current || workspaces.loading) return;
    editor.current = createSqlEditor(editorHost.current, {
      doc: initial,
      label: 'SQL statement',
      workspaces: workspaces.value ?? [],
      check: (text) => checkSql(text, latest.current.parameters()),
      onChange: (text) => {
        setSqlText(text);
        sessionStorage.setItem(DRAFT_KEY, text);
      },
      onRun: () => latest.current.run(),
    });
    return () => editor.current?.destroy();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [workspaces.loading]);

  // The elapsed time ticks while the job runs.
  useEffect(() => {
    if (!job?.in_progress) return;
    const timer = setInterval(() => setNow(Date.now()), 200);
    return () => clearInterval(timer);
  }, [job?.in_progress]);

  const elapsedMs = job ? (job.finished_at ? Date.parse(job.finished_at) : now) - Date.parse(job.created_at) : 0;
  const turnPage = async (offset: number) => {
    if (!job) return;
    try {
      setPage(await resultsPage(job.execution_id, offset, PAGE_ROWS));
    } catch (e) {
      setError(e);
    }
  };

  return (
    <section class="query">
      <div>
        <h1>Query</h1>
        <ErrorNotice error={workspaces.error} />
        <div class="editor" ref={editorHost} data-testid="sql-editor" />
        {names.length > 0 && (
          <fieldset class="params">
            <legend>Parameters</legend>
            {names.map((name) => (
              <label key={name}>
                :{name}
                <input
                  name={`param-${name}`}
                  value={values[name] ?? ''}
                  placeholder={saved.has(name) ? `saved: ${String(saved.get(name)!.value)}` : 'value'}
                  onInput={(e) => setValues({ ...values, [name]: e.currentTarget.value })}
                />
                <button
                  type="button"
                  class="link"
                  disabled={(values[name] ?? '') === ''}
                  onClick={() => saveVariable(name, parseParam(values[name]) as string | number | boolean).then(variables.reload, setError)}
                >
                  Save as variable
                </button>
              </label>
            ))}
          </fieldset>
        )}
        <div class="toolbar">
          <button type="button" class="primary" onClick={() => void run()} disabled={job?.in_progress} title="Ctrl/Cmd+Enter">
            Run
          </button>
          {job?.in_progress && (
            <button type="button" class="danger" onClick={() => cancelJob(job.execution_id).then(setJob, setError)}>
              Cancel
            </button>
          )}
          <span class="muted small">Ctrl/Cmd+Enter runs</span>
          {job && (
            <span class="status" role="status" data-testid="job-status">
              {job.status} · {(elapsedMs / 1000).toFixed(1)} s{job.row_count !== null ? ` · ${job.row_count.toLocaleString()} rows` : ''}
            </span>
          )}
        </div>
        <ErrorNotice error={error} onDismiss={() => setError(undefined)} />
        {job?.error && <ErrorNotice error={new ApiError(0, job.error.code, 'The query failed', job.error.message)} />}
        {job?.status === 'succeeded' && (
          <div class="toolbar">
            Download:
            <a class="button" href={downloadUrl(job, 'csv')} download>
              CSV
            </a>
            <a class="button" href={downloadUrl(job, 'json')} download>
              JSON
            </a>
            <a class="button" href={downloadUrl(job, 'parquet')} download>
              Parquet
            </a>
          </div>
        )}
        {page && <ResultGrid page={page} onPage={turnPage} />}
      </div>
      <aside class="side" aria-label="Recent queries and variables">
        <h2>Recent queries</h2>
        <ErrorNotice error={recent.error} />
        <ul data-testid="recent">
          {(recent.value ?? []).slice(0, 15).map((j) => (
            <li key={j.execution_id}>
              <button type="button" title={j.sql_text} onClick={() => editor.current?.setText(j.sql_text)}>
                {j.status === 'succeeded' ? '✓' : j.status === 'failed' ? '✗' : '•'} {j.sql_text.replace(/\s+/g, ' ').slice(0, 60)}
              </button>
            </li>
          ))}
        </ul>
        <h2>Saved variables</h2>
        {variables.value && variables.value.length === 0 && <p class="muted small">None yet: fill a :name parameter and save it.</p>}
        <ul>
          {(variables.value ?? []).map((v) => (
            <li key={v.name}>
              <code>:{v.name}</code> = {String(v.value)}
            </li>
          ))}
        </ul>
      </aside>
    </section>
  );
}

function ResultGrid({ page, onPage }: { page: ResultsPage; onPage: (offset: number) => void }) {
  const columns = page.columns.map((c) => (typeof c === 'string' ? { name: c, type: '' } : c));
  const first = page.num_rows === 0 ? 0 : page.offset + 1;
  const last = page.offset + page.num_rows;
  return (
    <div>
      <div class="pager">
        <button type="button" disabled={page.offset === 0} onClick={() => onPage(Math.max(0, page.offset - PAGE_ROWS))}>
          Previous
        </button>
        <span data-testid="page-range">
          Rows {first.toLocaleString()}–{last.toLocaleString()} of {page.total_rows.toLocaleString()}
        </span>
        <button type="button" disabled={last >= page.total_rows} onClick={() => onPage(page.offset + PAGE_ROWS)}>
          Next
        </button>
      </div>
      <div class="scroll results">
        <table data-testid="results">
          <thead>
            <tr>
              {columns.map((c) => (
                <th key={c.name} scope="col" title={c.type}>
                  {c.name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {page.data.map((row, i) => (
              <tr key={page.offset + i}>
                {row.map((value, j) => (
                  <td key={j}>{formatCell(value)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
