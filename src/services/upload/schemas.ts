import { z } from 'zod';
import { ENCODING_NAMES, TEXT_ENCODINGS } from '../../core/engine/index.ts';
import { BinaryBody } from '../../core/http/index.ts';

const Column = z.object({
  name: z.string().min(1).max(255),
  type: z.string().min(1).max(64),
  nullable: z.boolean().optional(),
});

const Char = z.string().length(1, 'must be one character');

const OnError = z
  .enum(['fail', 'null', 'skip'])
  .describe(
    "What a write does with a value the contract cannot store: fail refuses the file (409 VALUE_NOT_STORABLE); null stores NULL instead (a record whose NOT NULL column would be NULL is left out); skip leaves the record out. Counted in the write and the commit; the rejected values are at GET /upload/v2/contracts/{id}/rejects",
  );

export const ContractRequest = z.object({
  destination: z.string().min(5).max(200).describe("'workspace.collection.dataset'"),
  schema: z
    .object({
      mode: z.enum(['declared', 'infer', 'dataset', 'auto']).default('auto'),
      columns: z.array(Column).min(1).max(4000).optional().describe('Every column, for declared mode'),
    })
    .prefault({}),
  commit_mode: z
    .enum(['append', 'replace'])
    .default('append')
    .describe("append: the commit adds this upload's rows to the dataset; replace: the new snapshot holds only this upload (history keeps the old ones)"),
  on_error: OnError.default('fail'),
  format: z
    .object({
      type: z.enum(['csv', 'jsonl', 'parquet']).optional().describe('Default: from each file name'),
      delimiter: Char.optional(),
      header: z.boolean().optional(),
      quote: Char.optional(),
      escape: Char.optional(),
      null_string: z.string().max(32).optional(),
      date_format: z.string().min(1).max(64).optional().describe('strptime format of DATE columns; sniffed when not given'),
      timestamp_format: z.string().min(1).max(64).optional().describe('strptime format of TIMESTAMP columns; sniffed when not given'),
      encoding: z
        .enum(Object.keys(ENCODING_NAMES) as [string, ...string[]])
        .optional()
        .describe('Text encoding of CSV/JSONL files (default utf-8); latin-1 and windows-1252 are converted to UTF-8 while they stream. Parquet ignores it'),
    })
    .optional(),
});
export type ContractRequest = z.infer<typeof ContractRequest>;

export const ContractParams = z.object({ contract_id: z.string().min(1).max(64) });

export const PatchRequest = z.object({
  columns: z
    .record(z.string().min(1).max(255), z.object({ type: z.string().min(1).max(64).optional(), ignore: z.boolean().optional() }))
    .describe('Columns to retype or decline ({} to change only the commit_mode)'),
  commit_mode: z.enum(['append', 'replace']).optional().describe('Changes how the commit changes the dataset (while the contract is open)'),
  on_error: OnError.optional().describe('Changes what later writes do with a value the contract cannot store (writes made already stay as they are)'),
});

export const RejectsQuery = z.object({ file: z.string().min(1).max(255).optional().describe("Only this file's rejected values (default: every file's)") });

export const AcceptRequest = z.object({ schema_fingerprint: z.string().min(1).max(200) });

export const CommitRequest = z.object({ message: z.string().max(2000).optional() }).nullish();

export const DataHeaders = z.object({
  'x-file-name': z.string().min(1).max(255).optional(),
  'idempotency-key': z.string().min(1).max(255).optional(),
});

export const CommitHeaders = z.object({ 'idempotency-key': z.string().min(1).max(255).optional() });

// ── answers ──

export const CsvDialect = z
  .object({
    delimiter: z.string(),
    quote: z.string(),
    escape: z.string(),
    header: z.boolean().describe('Whether the first record is a header'),
    newline: z.string().describe('The record separator the sample has (informational)'),
    date_format: z.string().nullable(),
    timestamp_format: z.string().nullable(),
    encoding: z.enum(TEXT_ENCODINGS).describe('The text encoding the file is read in (converted to UTF-8 while it streams)'),
  })
  .describe("The CSV dialect every write of the file is read with: DuckDB's sniffer's findings on the sample, with the client's options winning")
  .meta({ id: 'CsvDialect' });

const ColumnType = z.object({ name: z.string(), type: z.string() });
const Rejected = {
  rows_rejected: z.number().describe("Records the contract's on_error policy left out"),
  values_nulled: z.number().describe("Values the contract's on_error policy stored as NULL"),
};
const Totals = z.object({ files: z.number(), rows: z.number(), bytes: z.number(), source_bytes: z.number(), ...Rejected });
const WrittenFile = z.object({ file: z.string(), format: z.string(), rows: z.number(), bytes: z.number(), source_bytes: z.number(), parts: z.number(), ...Rejected });

export const PlanEntry = z
  .object({
    column: z.string(),
    action: z.enum(['keep', 'retag', 'widen', 'cast', 'ignored', 'undeclared', 'unsupported']),
    source_type: z.string().nullable(),
    target_type: z.string().nullable(),
    nullable: z.boolean(),
    sources: z.record(z.string(), z.string().nullable()).optional().describe('The type each file has the column as, when files differ'),
  })
  .meta({ id: 'PlanEntry' });

export const ContractIssue = z
  .object({ severity: z.enum(['blocking', 'warning']), code: z.string(), column: z.string().nullable(), file: z.string().nullable(), message: z.string() })
  .meta({ id: 'ContractIssue' });

export const Contract = z
  .object({
    contract_id: z.string(),
    state: z.enum(['proposed', 'accepted', 'stale', 'committed']),
    mode: z.enum(['declared', 'infer', 'dataset']),
    requested_mode: z.string().describe('The mode asked for: auto, declared, infer or dataset'),
    destination: z.string(),
    dataset_exists: z.boolean(),
    commit_mode: z.enum(['append', 'replace']),
    on_error: z.enum(['fail', 'null', 'skip']),
    plan: z.array(PlanEntry),
    issues: z.array(ContractIssue),
    values: z.record(z.string(), z.unknown()).describe('A sampled value of each column'),
    schema_fingerprint: z.string(),
    expires_at: z.string(),
    created_at: z.string(),
    created_by: z.string(),
    files: z.array(
      z.object({
        name: z.string(),
        format: z.string(),
        encoding: z.enum(TEXT_ENCODINGS).optional().describe('CSV and JSONL files: the text encoding every write of the file is read in'),
        csv: CsvDialect.optional().describe('CSV files: the dialect every write of the file is read with'),
      }),
    ),
    written: z.array(WrittenFile.extend({ written_at: z.string() })),
    totals: Totals,
    snapshot: z.object({ snapshot_id: z.number() }).nullable(),
    rows_written: z.number().nullable(),
  })
  .meta({ id: 'Contract' });

export const WriteResult = z
  .object({ contract_id: z.string(), written: z.array(WrittenFile.extend({ columns: z.array(ColumnType) })), totals: Totals })
  .meta({ id: 'WriteResult' });

export const CommitResult = z
  .object({
    contract_id: z.string(),
    state: z.literal('committed'),
    dataset: z.string(),
    snapshot: z.object({
      snapshot_id: z.number(),
      parent_snapshot_id: z.number().nullable(),
      committed_at: z.string(),
      operation: z.string(),
      total_records: z.number(),
    }),
    rows_written: z.number(),
    commit_mode: z.enum(['append', 'replace']),
    rows_replaced: z.number().nullable().describe("replace: the rows of the snapshot it replaced (0 when the dataset had none); append: null"),
    ...Rejected,
    rejects_url: z.string().optional().describe('Where the rejected values are (a path on this server), when there were any'),
  })
  .meta({ id: 'CommitResult' });
export type CommitResult = z.infer<typeof CommitResult>;

/** The negotiation's multipart body, read by the route itself. */
export const NegotiationForm = z.object({
  contract: ContractRequest.describe('A JSON part'),
  sample: z.array(BinaryBody).describe('One part per file: a prefix (CSV/JSONL) or the footer (Parquet), named by its file name'),
});

/** A write's body: the file's bytes, whatever its content-type. */
export const FileBody = { '*/*': BinaryBody.describe('The whole file (CSV, JSONL or Parquet), streamed') };
