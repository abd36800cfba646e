/** A dataset: size and rows, schema with statistics, snapshots, tags, a preview, and how to connect. */
import { useState } from 'preact/hooks';
import { datasetMetadata, formatBytes, loadTable, odataPath, previewRows, sqlColumns } from '../catalog.ts';
import { ErrorNotice } from '../errors.tsx';
import type { ViewProps } from '../routes.ts';
import { useApi } from '../use-api.ts';
import { Breadcrumbs } from './browse.tsx';

interface SnapshotRow {
  id: string;
  at: string;
  operation: string;
  records: string;
  size: string;
}

export default function Dataset({ params }: ViewProps) {
  const { workspace, collection, dataset } = params;
  const info = useApi(() => datasetMetadata(workspace, collection, dataset), [workspace, collection, dataset]);
  const table = useApi(() => loadTable(workspace, collection, dataset), [workspace, collection, dataset]);
  const types = useApi(() => sqlColumns(workspace, collection, dataset), [workspace, collection, dataset]);
  const preview = useApi(() => previewRows(workspace, collection, dataset), [workspace, collection, dataset]);
  const feedUrl = `${location.origin}${odataPath(workspace, collection, dataset)}`;

  const metadata = table.value?.metadata as { snapshots?: { 'snapshot-id': number; 'timestamp-ms': number; summary: Record<string, string> }[] } | undefined;
  const snapshots: SnapshotRow[] = [...(metadata?.snapshots ?? [])].reverse().map((s) => ({
    id: String(s['snapshot-id']),
    at: new Date(s['timestamp-ms']).toLocaleString(),
    operation: s.summary['lakeport.operation'] ?? s.summary.operation ?? '',
    records: s.summary['total-records'] ?? '',
    size: formatBytes(Number(s.summary['total-files-size'])),
  }));
  const current = info.value?.snapshot;

  return (
    <section class="dataset">
      <Breadcrumbs workspace={workspace} collection={collection} dataset={dataset} />
      <h1>
        {workspace}.{collection}.{dataset}
      </h1>
      {info.value?.description && <p>{info.value.description}</p>}
      <ErrorNotice error={info.error} />
      {current && (
        <dl class="facts" data-testid="dataset-facts">
          <div>
            <dt>Rows</dt>
            <dd>{Number(current.totalRecords ?? 0).toLocaleString()}</dd>
          </div>
          <div>
            <dt>Size</dt>
            <dd>{formatBytes(Number(current.totalDataSize ?? 0))}</dd>
          </div>
          <div>
            <dt>Snapshot</dt>
            <dd>{current.id ?? '–'}</dd>
          </div>
          <div>
            <dt>Last commit</dt>
            <dd>
              {current.author ?? 'unknown'}
              {current.message ? `: “${current.message}”` : ''}
            </dd>
          </div>
          {info.value?.role && (
            <div>
              <dt>Your role</dt>
              <dd>{info.value.role}</dd>
            </div>
          )}
        </dl>
      )}

      <h2>Schema</h2>
      {info.loading && !info.value && <p class="muted">Loading the schema…</p>}
      {info.value && (
        <div class="scroll">
          <table data-testid="schema">
            <Head columns={['Column', 'Type', 'Nullable', 'Min', 'Max', 'Nulls', 'Distinct']} />
            <tbody>
              {info.value.columns.map((c) => (
                <tr key={c.name}>
                  <th scope="row">{c.name}</th>
                  <td>
                    <code>{types.value?.get(c.name) ?? c.originalType ?? c.type}</code>
                  </td>
                  <td>{c.nullable ? 'yes' : 'no'}</td>
                  <td>{c.stats.min ?? '–'}</td>
                  <td>{c.stats.max ?? '–'}</td>
                  <td>{c.stats.nullCount ?? '–'}</td>
                  <td>{c.stats.distinctCount ?? '–'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      <h2>Preview</h2>
      <ErrorNotice error={preview.error} />
      {preview.value && <RowsTable rows={preview.value} />}

      <div class="two">
        <div>
          <h2>Snapshots</h2>
          <ErrorNotice error={table.error} />
          {snapshots.length > 0 && <SnapshotsTable snapshots={snapshots} workspace={workspace} collection={collection} dataset={dataset} />}
        </div>
        <div>
          <h2>Tags</h2>
          {info.value && info.value.tags.length === 0 && <p class="muted">No tags on this version.</p>}
          {info.value && info.value.tags.length > 0 && (
            <ul data-testid="tags">
              {info.value.tags.map((t) => (
                <li key={t.name}>
                  <code>{t.name}</code> → snapshot {t.snapshotId}
                  {t.createdBy ? ` (by ${t.createdBy})` : ''}
                </li>
              ))}
            </ul>
          )}
        </div>
      </div>

      <ConnectPanel url={feedUrl} />
    </section>
  );
}

/** Author and message per snapshot come from the $metadata of that version, fetched on demand. */
function SnapshotsTable({ snapshots, workspace, collection, dataset }: { snapshots: SnapshotRow[]; workspace: string; collection: string; dataset: string }) {
  const commits = useApi(
    () => Promise.all(snapshots.slice(0, 10).map((s) => datasetMetadata(workspace, collection, dataset, s.id).then((m) => m.snapshot, () => undefined))),
    [snapshots.map((s) => s.id).join()],
  );
  return (
    <div class="scroll">
      <table data-testid="snapshots">
        <Head columns={['Snapshot', 'Committed', 'Author', 'Message', 'Operation', 'Rows', 'Size']} />
        <tbody>
          {snapshots.map((s, i) => (
            <tr key={s.id}>
              <td>
                <code>{s.id}</code>
              </td>
              <td>{s.at}</td>
              <td>{commits.value?.[i]?.author ?? ''}</td>
              <td>{commits.value?.[i]?.message ?? ''}</td>
              <td>{s.operation}</td>
              <td>{s.records}</td>
              <td>{s.size}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A table's header row of column names. */
export function Head({ columns }: { columns: string[] }) {
  return (
    <thead>
      <tr>
        {columns.map((c) => (
          <th key={c} scope="col">
            {c}
          </th>
        ))}
      </tr>
    </thead>
  );
}

export function RowsTable({ rows }: { rows: Record<string, unknown>[] }) {
  if (rows.length === 0) return <p class="muted">No rows.</p>;
  const columns = Object.keys(rows[0]);
  return (
    <div class="scroll">
      <table data-testid="preview">
        <Head columns={columns} />
        <tbody>
          {rows.map((row, i) => (
            <tr key={i}>
              {columns.map((c) => (
                <td key={c}>{formatCell(row[c])}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export const formatCell = (value: unknown) => (value === null || value === undefined ? '∅' : typeof value === 'object' ? JSON.stringify(value) : String(value));

function ConnectPanel({ url }: { url: string }) {
  const [copied, setCopied] = useState<string>();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(url);
      setCopied('Copied');
    } catch {
      setCopied('Copy failed: select the address and copy it');
    }
  };
  return (
    <section class="connect" aria-labelledby="connect-title">
      <h2 id="connect-title">Connect from Excel or Power BI</h2>
      <div class="copy-row">
        <label for="odata-url">OData feed</label>
        <input id="odata-url" readOnly value={url} onFocus={(e) => e.currentTarget.select()} />
        <button type="button" onClick={copy}>
          Copy
        </button>
        <span role="status" class="muted">
          {copied}
        </span>
      </div>
      <ol>
        <li>
          <strong>Excel:</strong> Data → Get Data → From Other Sources → From OData Feed; paste the address.
        </li>
        <li>
          <strong>Power BI Desktop:</strong> Get data → OData feed; paste the address.
        </li>
        <li>
          Choose <em>Basic</em> authentication: your client id as user name and a credential secret as password (docs/odata.md).
        </li>
      </ol>
    </section>
  );
}
