import crypto from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { mayAccessOwned, type Authorizer, type Principal } from '../../core/authz/index.ts';
import { normalizeRef, type Catalog, type ColumnDef, type Dataset, type DatasetRef, type Snapshot } from '../../core/catalog/index.ts';
import { newId } from '../../core/crypto/index.ts';
import {
  decodeToUtf8,
  dialectOptions,
  FileShapeError,
  foreignBom,
  normalizeType,
  notUtf8,
  notUtf8Message,
  physicalType,
  textEncoding,
  ValueNotStorableError,
  type FileFormat,
  type Ingestor,
  type OnError,
  type ReadOptions,
  type SourceColumn,
  type TextEncoding,
} from '../../core/engine/index.ts';
import type { Logger } from '../../core/logger.ts';
import { AppError, isAppError, RequestValidationError } from '../../core/errors/index.ts';
import type { BlobStore } from '../../core/storage/index.ts';
import { uploadError, type UPLOAD_ERRORS } from './errors.ts';
import { planContract, type Issue, type Overrides, type PlanEntry, type SampledFile, type TargetColumnDef } from './plan.ts';
import type { ContractRow, UploadRepo, WriteRow } from './repo.ts';
import { REJECTS_HEADER, rejectsCsv, storableFix } from './rejects.ts';
import type { CommitResult, ContractRequest } from './schemas.ts';

export interface UploadLimits {
  contractLifetimeMs: number;
  sampleMaxBytes: number;
  fileMaxBytes: number;
  /** A write is converted in record-aligned chunks of at least this many bytes while it arrives. */
  chunkBytes: number;
  /** Rejected values a write keeps in its rejects file (on_error null/skip); the counts stay exact. */
  maxRejects: number;
}

export const DEFAULT_LIMITS: UploadLimits = {
  contractLifetimeMs: 24 * 60 * 60 * 1000,
  sampleMaxBytes: 16 * 1024 * 1024,
  fileMaxBytes: 50 * 1024 * 1024 * 1024,
  chunkBytes: 64 * 1024 * 1024,
  maxRejects: 100_000,
};

/** Parts staged at once (on S3 each is a multipart upload of its own). */
const STAGE_CONCURRENCY = 2;

/** Runs `tasks`, at most `concurrency` at a time. */
async function inBatches(tasks: (() => Promise<unknown>)[], concurrency: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) await tasks[next++]();
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, tasks.length) }, worker));
}

export interface UploadDeps {
  repo: UploadRepo;
  catalog: Catalog;
  authz: Authorizer;
  ingestor: Ingestor;
  blobs: BlobStore;
  /** A local directory for uploads in flight. */
  scratchDir: string;
  limits?: Partial<UploadLimits>;
  log: Logger;
  /** Told of every committed snapshot's dataset (automatic compaction, REFRESH ON COMMIT materialized views); must not throw. */
  onCommitted?: (datasetId: string) => void;
}

export interface Sample {
  name: string;
  /** A local file holding the sample's bytes. */
  path: string;
}

const PARQUET_MAGIC = Buffer.from('PAR1');
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

export function formatOf(name: string, declared?: string): FileFormat {
  if (declared === 'csv' || declared === 'jsonl' || declared === 'parquet') return declared;
  const ext = path.extname(name).toLowerCase();
  if (ext === '.parquet') return 'parquet';
  if (ext === '.jsonl' || ext === '.ndjson' || ext === '.json') return 'jsonl';
  return 'csv';
}

/** A dataset's column as the planner sees it (IPv4 is a labelled VARCHAR in the catalog). */
function plannerColumn(c: ColumnDef): ColumnDef {
  return { ...c, type: c.logical_type === 'ipv4' ? 'IPV4' : (normalizeType(c.type) ?? c.type) };
}

/** The catalog's column for a planned target column. */
function catalogColumn(c: TargetColumnDef): ColumnDef {
  const { source: _source, ...column } = c;
  return c.type === 'IPV4' ? { ...column, type: physicalType(c.type), logical_type: 'ipv4' } : column;
}

function contractError(code: keyof typeof UPLOAD_ERRORS, detail: string, extra: Record<string, unknown> = {}) {
  return uploadError(code, detail, { extra });
}

/** The answer of a contract's commit (the first, and every repeat of it). */
function commitResponse(row: ContractRow, snapshot: Snapshot, rowsWritten: number, writes: WriteRow[]): CommitResult {
  const replace = row.commit_mode === 'replace';
  const rejected = rejectedTotals(writes);
  return {
    contract_id: row.contract_id,
    state: 'committed' as const,
    dataset: `${row.workspace}.${row.collection}.${row.dataset}`,
    snapshot: {
      snapshot_id: snapshot.snapshot_id,
      parent_snapshot_id: snapshot.parent_snapshot_id,
      committed_at: snapshot.committed_at.toISOString(),
      operation: snapshot.operation,
      total_records: Number(snapshot.total_records),
    },
    rows_written: rowsWritten,
    commit_mode: row.commit_mode,
    // An overwrite removed the replaced snapshot's rows; a replace that created its dataset replaced none.
    rows_replaced: replace ? (snapshot.operation === 'overwrite' ? Number(snapshot.rows_removed) : 0) : null,
    ...rejected,
    ...(rejected.rows_rejected + rejected.values_nulled > 0 ? { rejects_url: rejectsUrl(row.contract_id) } : {}),
  };
}

function rejectedTotals(writes: WriteRow[]) {
  return { rows_rejected: writes.reduce((n, w) => n + Number(w.rows_rejected), 0), values_nulled: writes.reduce((n, w) => n + Number(w.values_nulled), 0) };
}

const rejectsUrl = (contractId: string) => `/upload/v2/contracts/${encodeURIComponent(contractId)}/rejects`;

export class UploadService {
  private readonly limits: UploadLimits;
  /** Files this process staged since it started, and their bytes as sent (GET /metrics). */
  readonly received = { writes: 0, bytes: 0 };

  constructor(private readonly deps: UploadDeps) {
    this.limits = { ...DEFAULT_LIMITS, ...deps.limits };
  }

  get sampleMaxBytes() {
    return this.limits.sampleMaxBytes;
  }

  /** Changes limits of the running service (tests and benchmarks use a small chunk size). */
  setLimits(limits: Partial<UploadLimits>): void {
    Object.assign(this.limits, limits);
  }

  // ── negotiation ────────────────────────────────────────────────────────────

  async negotiate(caller: Principal, request: ContractRequest, samples: Sample[]) {
    const ref = this.destination(request.destination);
    await this.deps.authz.require(caller, 'writer', { workspace: ref.workspace, collection: ref.collection, dataset: ref.dataset });
    if (!(await this.deps.catalog.findNamespace(ref.workspace))) throw uploadError('WORKSPACE_NOT_FOUND', `Workspace '${ref.workspace}' does not exist`);
    if (samples.length === 0) throw RequestValidationError.at(['body', 'sample'], 'send one sample part per file (a prefix for CSV/JSONL, the footer for Parquet)');
    const names = new Set<string>();
    for (const s of samples) {
      if (names.has(s.name)) throw RequestValidationError.at(['body', 'sample'], `two samples are named '${s.name}'; file names must be unique`);
      names.add(s.name);
    }

    const dataset = await this.deps.catalog.findDataset(ref);
    const mode = this.resolveMode(request.schema.mode, dataset, request);
    const options = this.readOptions(request);
    const files = await Promise.all(samples.map((s) => this.inspectSample(s, options, request.format?.type)));
    const values = this.sampleValues(files.map((f) => f.values));
    const sampled: SampledFile[] = files.map((f) => ({ name: f.name, format: f.format, columns: f.columns, ...(f.format === 'parquet' ? {} : { encoding: options.encoding ?? 'utf-8' }), ...(f.csv ? { csv: f.csv } : {}) }));
    const declared = mode === 'declared' ? request.schema.columns!.map((c) => this.declaredColumn(c)) : null;
    const planned = this.plan(mode, sampled, declared, dataset, {});
    const row = await this.deps.repo.insertContract({
      contract_id: newId('ctr'),
      owner: caller.identity,
      permissions: JSON.stringify(caller.permissions),
      workspace: ref.workspace,
      collection: ref.collection,
      dataset: ref.dataset,
      dataset_id: dataset?.dataset_id ?? null,
      definition_version: dataset?.definition_version ?? null,
      requested_mode: request.schema.mode,
      mode,
      commit_mode: request.commit_mode,
      on_error: request.on_error,
      state: mode === 'infer' ? 'proposed' : 'accepted',
      format: JSON.stringify(options),
      files: JSON.stringify(sampled),
      declared: declared ? JSON.stringify(declared) : null,
      overrides: JSON.stringify({}),
      plan: JSON.stringify(planned.plan),
      issues: JSON.stringify(planned.issues),
      sample_values: JSON.stringify(values),
      target: JSON.stringify(planned.target),
      schema_fingerprint: planned.fingerprint,
      expires_at: new Date(Date.now() + this.limits.contractLifetimeMs),
    });
    return this.view(row, []);
  }

  private destination(text: string): DatasetRef {
    const parts = text.split('.');
    if (parts.length !== 3) throw RequestValidationError.at(['body', 'contract', 'destination'], "destination must be 'workspace.collection.dataset'");
    try {
      return normalizeRef({ workspace: parts[0], collection: parts[1], dataset: parts[2] });
    } catch (error) {
      if (error instanceof AppError) throw RequestValidationError.at(['body', 'contract', 'destination'], error.message);
      throw error;
    }
  }

  private resolveMode(requested: string, dataset: Dataset | undefined, request: ContractRequest): 'declared' | 'infer' | 'dataset' {
    const declares = dataset !== undefined && dataset.kind === 'table' && dataset.columns.length > 0;
    if (dataset && dataset.kind !== 'table') {
      throw contractError('MODE_NOT_APPLICABLE', `${dataset.workspace}.${dataset.collection}.${dataset.name} is a ${dataset.kind}; uploads go to tables`);
    }
    switch (requested) {
      case 'auto':
        return declares ? 'dataset' : 'infer';
      case 'infer':
        if (declares) throw contractError('MODE_NOT_APPLICABLE', 'The dataset already declares its columns, so there is nothing to infer; use mode dataset (or auto)');
        return 'infer';
      case 'dataset':
        if (!declares) throw contractError('MODE_NOT_APPLICABLE', 'The dataset does not exist, so it has no columns to use; use mode infer or declared (or auto)');
        return 'dataset';
      default:
        if (!request.schema.columns?.length) throw RequestValidationError.at(['body', 'contract', 'schema', 'columns'], 'declared mode needs the columns');
        return 'declared';
    }
  }

  private readOptions(request: ContractRequest): ReadOptions {
    const f = request.format ?? {};
    return {
      delimiter: f.delimiter,
      header: f.header,
      quote: f.quote,
      escape: f.escape,
      null_string: f.null_string,
      date_format: f.date_format,
      timestamp_format: f.timestamp_format,
      ...(f.encoding ? { encoding: textEncoding(f.encoding) } : {}),
    };
  }

  private declaredColumn(c: { name: string; type: string; nullable?: boolean }): ColumnDef {
    const type = normalizeType(c.type);
    if (!type) throw RequestValidationError.at(['body', 'contract', 'schema', 'columns'], `unsupported type '${c.type}' for column '${c.name}'`);
    return { name: c.name, type, nullable: c.nullable ?? true };
  }

  private async inspectSample(sample: Sample, options: ReadOptions, declaredFormat?: string) {
    const format = formatOf(sample.name, declaredFormat);
    let file = sample.path;
    if (format === 'parquet') {
      // A footer sample: DuckDB reads its metadata once the leading magic is put before it.
      const footer = await fsp.readFile(sample.path);
      if (footer.length < 12 || !footer.subarray(-4).equals(PARQUET_MAGIC)) {
        throw contractError('SAMPLE_UNREADABLE', `The sample of ${sample.name} is not a Parquet footer (it must end with PAR1)`, { file: sample.name });
      }
      file = `${sample.path}.parquet`;
      await fsp.writeFile(file, Buffer.concat([PARQUET_MAGIC, footer]));
    } else file = await this.utf8Sample(sample, options.encoding ?? 'utf-8');
    try {
      const schema = await this.deps.ingestor.inspect(file, format, options);
      return { name: sample.name, format, columns: schema.columns, values: schema.values, csv: schema.csv };
    } catch (error) {
      throw contractError('SAMPLE_UNREADABLE', `The sample of ${sample.name} cannot be read as ${format}: ${(error as Error).message.split('\n')[0]}`, { file: sample.name });
    }
  }

  /**
   * A text sample as UTF-8 (a local file): a single-byte one converted, a UTF-8 one checked, so a file
   * in another encoding is refused in words (DuckDB only says "Invalid unicode" at some line).
   */
  private async utf8Sample(sample: Sample, encoding: TextEncoding): Promise<string> {
    const bytes = await fsp.readFile(sample.path);
    const bom = foreignBom(bytes);
    if (bom) {
      throw contractError('SAMPLE_NOT_UTF8', `The sample of ${sample.name} starts with a ${bom} byte order mark: the file is ${bom}, which Lakeport does not read; save it as UTF-8 (or Latin-1/Windows-1252 with "format": {"encoding": …})`, { file: sample.name, encoding: bom });
    }
    const nul = bytes.indexOf(0);
    if (nul >= 0) {
      // A text file holds no NUL byte (and PostgreSQL could not keep one in the contract's JSON).
      const line = bytes.subarray(0, nul).filter((b) => b === 0x0a).length + 1;
      throw contractError('SAMPLE_UNREADABLE', `The sample of ${sample.name} holds a NUL byte (line ${line}), which no text file has: is it a binary file, or UTF-16?`, { file: sample.name, line });
    }
    if (encoding === 'utf-8') {
      const found = notUtf8(bytes);
      if (found) {
        throw contractError('SAMPLE_NOT_UTF8', `The sample of ${sample.name} is not UTF-8: ${notUtf8Message(found)}`, { file: sample.name, line: found.line, bytes: found.bytes, suggested_encoding: found.guess });
      }
      return sample.path;
    }
    if (bytes.subarray(0, 3).equals(UTF8_BOM)) {
      throw contractError('SAMPLE_UNREADABLE', `The sample of ${sample.name} starts with a UTF-8 byte order mark, so the file is UTF-8, not ${encoding}: leave the encoding out`, { file: sample.name });
    }
    const file = `${sample.path}.utf8`;
    await fsp.writeFile(file, decodeToUtf8(bytes, encoding));
    return file;
  }

  private sampleValues(perFile: Record<string, unknown>[]): Record<string, unknown> {
    const values: Record<string, unknown> = {};
    for (const v of perFile) for (const [k, x] of Object.entries(v)) if (values[k] === undefined || values[k] === null) values[k] = x;
    return values;
  }

  private plan(mode: string, files: SampledFile[], declared: ColumnDef[] | null, dataset: Dataset | undefined, overrides: Overrides) {
    const retyped = (c: ColumnDef) => {
      const type = Object.entries(overrides).find(([name]) => name.toLowerCase() === c.name.toLowerCase())?.[1].type;
      return type ? { ...c, type } : c;
    };
    const definition = mode === 'infer' ? undefined : mode === 'dataset' ? dataset!.columns.map(plannerColumn) : declared!.map(retyped);
    const planned = planContract(files, definition, overrides);
    if (mode === 'declared' && dataset && dataset.columns.length > 0) {
      const same = JSON.stringify(dataset.columns.map(plannerColumn).map((c) => [c.name, c.type])) === JSON.stringify(declared!.map((c) => [c.name, c.type]));
      if (!same) planned.issues.push({ severity: 'blocking', code: 'DECLARED_DIFFERS', column: null, file: null, message: 'The declared columns differ from the columns the dataset declares; use mode dataset, or change the dataset first' });
    }
    return planned;
  }

  // ── reading and changing a contract ────────────────────────────────────────

  /**
   * A contract the caller may see: its identity's, negotiated under permissions within the caller's
   * (core/authz `mayAccessOwned`), so a narrowed credential never sees wider ones' plans and sampled
   * values. Anything else is 404, like an unknown id.
   */
  private async own(caller: Principal, contractId: string): Promise<ContractRow> {
    return this.owned(caller, contractId, await this.deps.repo.getContract(contractId));
  }

  private owned(caller: Principal, contractId: string, row: ContractRow | undefined): ContractRow {
    if (!row || !mayAccessOwned(caller, row)) throw contractError('CONTRACT_NOT_FOUND', `No contract ${contractId}`);
    return row;
  }

  async get(caller: Principal, contractId: string) {
    const { row, writes } = await this.deps.repo.contractWithWrites(contractId);
    return this.view(this.owned(caller, contractId, row), writes);
  }

  private assertOpen(row: ContractRow) {
    if (row.state === 'committed') throw contractError('CONTRACT_COMMITTED', `Contract ${row.contract_id} is committed (snapshot ${row.snapshot_id}); negotiate a new one`);
    if (row.expires_at.getTime() <= Date.now()) throw contractError('CONTRACT_EXPIRED', `Contract ${row.contract_id} expired at ${row.expires_at.toISOString()}; negotiate a new one`);
  }

  /** PATCH: retype or decline columns, then re-plan the whole contract; or change its commit mode or on_error policy. */
  async replan(caller: Principal, contractId: string, columns: Overrides, commitMode?: 'append' | 'replace', onError?: OnError) {
    const row = await this.own(caller, contractId);
    this.assertOpen(row);
    if (row.mode === 'dataset' && Object.values(columns).some((c) => c.type !== undefined)) {
      throw contractError('CANNOT_RETYPE', 'In dataset mode the dataset declares the types; only declining columns ({"ignore": true}) is possible');
    }
    const known = new Set([...(row.files as SampledFile[]).flatMap((f) => f.columns.map((c) => c.name)), ...((row.declared as ColumnDef[] | null) ?? []).map((c) => c.name)].map((n) => n.toLowerCase()));
    for (const [name, c] of Object.entries(columns)) {
      if (!known.has(name.toLowerCase())) throw RequestValidationError.at(['body', 'columns', name], `this contract has no column '${name}'`);
      if (c.type !== undefined && !normalizeType(c.type)) throw RequestValidationError.at(['body', 'columns', name, 'type'], `unsupported type '${c.type}'`);
    }
    const overrides: Overrides = { ...row.overrides };
    for (const [name, c] of Object.entries(columns)) overrides[name] = { ...overrides[name], ...c, ...(c.type ? { type: normalizeType(c.type) } : {}) };
    const dataset = row.dataset_id ? await this.deps.catalog.findDataset(row.dataset_id) : undefined;
    const planned = this.plan(row.mode, row.files as SampledFile[], row.declared as ColumnDef[] | null, dataset, overrides);
    const changed = planned.fingerprint !== row.schema_fingerprint;
    if (changed) await this.discardWrites(row);
    const updated = await this.deps.repo.updateContract(contractId, {
      overrides: JSON.stringify(overrides),
      plan: JSON.stringify(planned.plan),
      issues: JSON.stringify(planned.issues),
      target: JSON.stringify(planned.target),
      schema_fingerprint: planned.fingerprint,
      state: changed && row.mode === 'infer' ? 'proposed' : row.state,
      ...(commitMode ? { commit_mode: commitMode } : {}),
      ...(onError ? { on_error: onError } : {}),
    });
    return this.view(updated, await this.deps.repo.writes(contractId));
  }

  async accept(caller: Principal, contractId: string, fingerprint: string) {
    const row = await this.own(caller, contractId);
    this.assertOpen(row);
    if (fingerprint !== row.schema_fingerprint) {
      throw contractError('FINGERPRINT_MISMATCH', `The schema changed since it was shown: the current fingerprint is ${row.schema_fingerprint}; review the plan and accept that one`, { schema_fingerprint: row.schema_fingerprint });
    }
    const updated = row.state === 'proposed' ? await this.deps.repo.updateContract(contractId, { state: 'accepted' }) : row;
    return this.view(updated, await this.deps.repo.writes(contractId));
  }

  /** DELETE: the contract is gone and its staged files with it (committed files belong to the dataset). */
  async abandon(caller: Principal, contractId: string): Promise<void> {
    const row = await this.own(caller, contractId);
    if (row.state !== 'committed') await this.discardWrites(row);
    else {
      // The committed parts are the dataset's; the rejects files are the contract's and go with it.
      for (const w of await this.deps.repo.writes(contractId)) if (w.rejects_path) await this.deps.blobs.delete(w.rejects_path);
    }
    await this.deps.repo.deleteContract(contractId);
  }

  /** Forgets the writes and deletes their staged files; false (nothing done) when a commit made them the dataset's. */
  private async discardWrites(row: ContractRow): Promise<boolean> {
    if (!(await this.deps.repo.deleteWrites(row.contract_id))) return false;
    await this.deps.blobs.deletePrefix(`lake/_staging/${row.contract_id}/`);
    return true;
  }

  /** Deletes contracts past their lifetime and their staged files (one committed meanwhile stays). */
  async sweepExpired(now = new Date()): Promise<number> {
    const expired = await this.deps.repo.expiredContracts(now);
    let swept = 0;
    for (const row of expired) {
      try {
        if (!(await this.discardWrites(row))) continue;
        await this.deps.repo.deleteContract(row.contract_id);
        swept++;
      } catch (error) {
        // One contract that cannot be swept now does not hold back the others; the next sweep tries again.
        this.deps.log.error({ err: error, contract_id: row.contract_id }, 'could not sweep an expired upload contract');
      }
    }
    return swept;
  }

  // ── writes ─────────────────────────────────────────────────────────────────

  /** Every check a write or commit must pass, the catalog's current definition included. */
  private async assertWritable(caller: Principal, row: ContractRow) {
    this.assertOpen(row);
    if (row.state === 'proposed') throw contractError('CONTRACT_NOT_ACCEPTED', `Contract ${row.contract_id} is proposed: review the plan, then PUT accept with schema_fingerprint ${row.schema_fingerprint}`);
    await this.deps.authz.require(caller, 'writer', { workspace: row.workspace, collection: row.collection, dataset: row.dataset });
    const blocking = (row.issues as Issue[]).filter((i) => i.severity === 'blocking');
    if (blocking.length > 0) throw contractError('CONTRACT_BLOCKED', `Contract ${row.contract_id} has blocking issues: ${blocking.map((i) => i.code).join(', ')}`, { issues: blocking });
    if (row.state === 'stale' || (await this.isStale(row))) {
      if (row.state !== 'stale') await this.deps.repo.markStale(row.contract_id);
      throw contractError('CONTRACT_STALE', `The definition of ${row.workspace}.${row.collection}.${row.dataset} changed since this contract was agreed; negotiate a new one`);
    }
  }

  private async isStale(row: ContractRow): Promise<boolean> {
    const dataset = await this.deps.catalog.findDataset({ workspace: row.workspace, collection: row.collection, dataset: row.dataset });
    if (!dataset) return row.dataset_id !== null;
    return dataset.dataset_id !== row.dataset_id || dataset.definition_version !== row.definition_version;
  }

  async write(caller: Principal, contractId: string, fileName: string | undefined, body: Readable) {
    const row = await this.own(caller, contractId);
    await this.assertWritable(caller, row);
    const files = row.files as SampledFile[];
    const name = fileName ?? (files.length === 1 ? files[0].name : undefined);
    const file = files.find((f) => f.name === name);
    if (!file) {
      throw contractError('FILE_NOT_NEGOTIATED', name ? `File '${name}' was not sampled at negotiation; negotiate it too` : `Name the file with the x-file-name header (one of ${files.map((f) => f.name).join(', ')})`);
    }
    await fsp.mkdir(this.deps.scratchDir, { recursive: true });
    const target = row.target as TargetColumnDef[];
    const limit = this.limits.fileMaxBytes;
    let converted;
    try {
      // The body is converted while it arrives, in record-aligned chunks: one Parquet part each.
      converted = await this.deps.ingestor.convertStream({
        body,
        format: file.format as FileFormat,
        // The file's negotiated dialect: a write never sniffs again.
        options: file.csv ? dialectOptions(file.csv, row.format as ReadOptions) : (row.format as ReadOptions),
        fileColumns: file.columns as SourceColumn[],
        target: target.map((t) => ({ name: t.name, type: t.type, nullable: t.nullable, source: t.source && file.columns.some((c) => c.name === t.source) ? t.source : undefined })),
        scratchDir: this.deps.scratchDir,
        partPath: () => this.deps.blobs.tempPath('.parquet'),
        chunkBytes: this.limits.chunkBytes,
        maxBytes: limit,
        tooLarge: () => contractError('FILE_TOO_LARGE', `Files are limited to ${limit} bytes`),
        onError: row.on_error,
        maxRejects: this.limits.maxRejects,
      });
    } catch (error) {
      if (error instanceof ValueNotStorableError) throw this.notStorable(row, file, error);
      if (error instanceof FileShapeError) throw contractError('FILE_DIFFERS_FROM_SAMPLE', `${file.name}: ${error.message}`, { file: file.name, ...(error.line === undefined ? {} : { line: error.line }) });
      throw error;
    }
    const { parts, sourceBytes, rejections } = converted;
    const rows = parts.reduce((n, p) => n + p.rows, 0);
    const bytes = parts.reduce((n, p) => n + p.bytes, 0);
    // Staged only once every part converted: a refused file leaves nothing behind.
    const writeId = newId('wr');
    const stem = `lake/_staging/${row.contract_id}/${crypto.randomUUID()}`;
    const keys = parts.map((_, i) => `${stem}-${String(i).padStart(5, '0')}.parquet`);
    // The rejected values: a CSV staged beside the parts, kept after the commit (not the dataset's).
    const rejectsKey = rejections.list.length > 0 ? `${stem}-rejects.csv` : null;
    let replaced: string[];
    try {
      if (rejectsKey) await this.deps.blobs.put(rejectsKey, rejectsCsv(file.name, rejections.list), { contentType: 'text/csv' });
      await inBatches(parts.map((part, i) => () => this.deps.blobs.putFile(keys[i], part.path)), STAGE_CONCURRENCY);
      replaced = await this.deps.repo.putWrite(
        {
          write_id: writeId,
          contract_id: row.contract_id,
          file_name: file.name,
          format: file.format,
          rows,
          bytes,
          source_bytes: sourceBytes,
          parts: parts.length,
          rows_rejected: rejections.rows,
          values_nulled: rejections.values,
          rejects_path: rejectsKey,
        },
        parts.map((part, i) => ({ write_id: writeId, part: i, path: keys[i], rows: part.rows, bytes: part.bytes, column_stats: JSON.stringify(part.stats) })),
      );
    } catch (error) {
      // Not recorded: whatever of it was staged is nobody's.
      for (const key of rejectsKey ? [...keys, rejectsKey] : keys) {
        await this.deps.blobs.delete(key).catch((failure: unknown) => this.deps.log.warn({ err: failure, key }, 'could not remove a staged file of a failed write'));
      }
      throw error;
    } finally {
      await Promise.all(parts.map((p) => fsp.rm(p.path, { force: true })));
    }
    this.received.writes++;
    this.received.bytes += sourceBytes;
    for (const key of replaced) await this.deps.blobs.delete(key);
    const writes = await this.deps.repo.writes(row.contract_id);
    return {
      contract_id: row.contract_id,
      written: [
        {
          file: file.name,
          format: file.format,
          rows,
          bytes,
          source_bytes: sourceBytes,
          parts: parts.length,
          rows_rejected: rejections.rows,
          values_nulled: rejections.values,
          columns: target.map((t) => ({ name: t.name, type: t.type })),
        },
      ],
      totals: this.totals(writes),
    };
  }

  // ── commit ─────────────────────────────────────────────────────────────────

  /**
   * Publishes the contract's writes as one snapshot. A commit is idempotent: once the contract is
   * committed — by this request or any other, however they raced — every commit of it answers that
   * snapshot, as the first did. The catalog transaction locks the contract's row first, so only one
   * commit of a contract runs at a time, and one that finds it committed leaves it as it is.
   */
  async commit(caller: Principal, contractId: string, idempotencyKey: string | undefined, message: string | undefined) {
    const row = await this.own(caller, contractId);
    if (idempotencyKey) {
      const replay = await this.claimKey(caller.identity, idempotencyKey, contractId);
      if (replay) return replay;
    }
    let done = row.state === 'committed' ? row : undefined;
    if (!done) {
      try {
        return await this.publish(caller, row, idempotencyKey, message);
      } catch (error) {
        // Whatever this attempt tripped over (the contract found committed under the lock, or the
        // dataset the other commit created looking like a changed definition), a commit that got
        // there first is this one's answer.
        done = await this.deps.repo.getContract(contractId);
        if (done?.state !== 'committed') {
          if (idempotencyKey) await this.deps.repo.releaseCommitKey(caller.identity, idempotencyKey);
          throw error;
        }
      }
    }
    const response = await this.committedResponse(done);
    if (idempotencyKey) await this.deps.repo.finishCommitKey(caller.identity, idempotencyKey, response);
    return response;
  }

  /** The commit itself: one catalog transaction, which marks the contract committed. */
  private async publish(caller: Principal, row: ContractRow, idempotencyKey: string | undefined, message: string | undefined) {
    const contractId = row.contract_id;
    await this.assertWritable(caller, row);
    const files = await this.deps.repo.writeParts(contractId);
    if (files.length === 0) throw contractError('NOTHING_TO_COMMIT', `Contract ${contractId} has no writes yet`);
    const target = row.target as TargetColumnDef[];
    const rowsWritten = files.reduce((n, f) => n + Number(f.rows), 0);
    const writes = await this.deps.repo.writes(contractId);
    // replace: the snapshot holds only this upload; the files leaving it are chosen under the dataset's
    // lock in the same transaction, so a reader sees the old snapshot or the new one, never a mix.
    const replace = row.commit_mode === 'replace' && row.dataset_id !== null;
    let response: CommitResult | undefined;
    let committed: string;
    try {
      committed = (await this.deps.catalog.commitWith(
        {
          dataset: row.dataset_id ?? undefined,
          expectedDefinitionVersion: row.definition_version ?? undefined,
          operation: row.dataset_id ? (replace ? 'overwrite' : 'append') : 'create',
          rebaseAppends: true,
          removeAllFiles: replace,
          author: caller.identity,
          message: message ?? null,
          addFiles: files.map((f) => ({ path: f.path, row_count: Number(f.rows), size_bytes: Number(f.bytes), column_stats: f.column_stats as never })),
        },
        {
          create: row.dataset_id ? undefined : { ref: { workspace: row.workspace, collection: row.collection, dataset: row.dataset }, definition: { columns: target.map(catalogColumn) } },
          before: async (trx) => {
            const state = await this.deps.repo.lockState(trx, contractId);
            if (state === undefined) throw contractError('CONTRACT_NOT_FOUND', `No contract ${contractId}`);
            if (state === 'committed') throw contractError('CONTRACT_COMMITTED', `Contract ${contractId} is committed`);
            // A write (or a re-plan, or abandoning) that landed since the parts were read changes what is published.
            const now = await this.deps.repo.writeParts(contractId, trx);
            if (now.map((p) => p.path).join('\n') !== files.map((f) => f.path).join('\n')) {
              throw contractError('CONTRACT_CHANGED', `The writes of contract ${contractId} changed while it was being committed; commit again`);
            }
          },
          within: async (trx, snapshot) => {
            response = commitResponse(row, snapshot, rowsWritten, writes);
            await this.deps.repo.markCommitted(trx, contractId, snapshot.snapshot_id, rowsWritten, idempotencyKey ? { owner: caller.identity, key: idempotencyKey, response } : undefined);
          },
        },
      )).dataset_id;
    } catch (error) {
      if (isAppError(error, 'DEFINITION_CONFLICT', 'ALREADY_EXISTS')) {
        await this.deps.repo.markStale(contractId);
        throw contractError('CONTRACT_STALE', `The definition of ${row.workspace}.${row.collection}.${row.dataset} changed since this contract was agreed; negotiate a new one`);
      }
      throw error;
    }
    this.deps.onCommitted?.(committed);
    return response!;
  }

  /** What the commit of a committed contract answered, rebuilt from its snapshot. */
  private async committedResponse(row: ContractRow): Promise<CommitResult> {
    return commitResponse(row, await this.deps.catalog.getSnapshot(row.snapshot_id!), Number(row.rows_written), await this.deps.repo.writes(row.contract_id));
  }

  /**
   * Idempotency (IETF draft): the key's first use runs the commit; a finished key answers its
   * original response; a key still running, or used for another contract, is a 409.
   */
  private async claimKey(owner: string, key: string, contractId: string): Promise<CommitResult | undefined> {
    const { repo } = this.deps;
    if (await repo.insertCommitKey(owner, key, contractId)) return undefined;
    const existing = await repo.getCommitKey(owner, key);
    if (existing.contract_id !== contractId) throw contractError('IDEMPOTENCY_KEY_REUSED', `Idempotency-Key '${key}' was used for contract ${existing.contract_id}; use a new key`);
    if (existing.state === 'done') return (existing.response as CommitResult | null) ?? undefined;
    // A run that died long ago left its key behind; its transaction never committed, so run again.
    if (Date.now() - existing.started_at.getTime() > 5 * 60_000) {
      await repo.restartCommitKey(owner, key);
      return undefined;
    }
    throw contractError('COMMIT_IN_PROGRESS', `A commit with Idempotency-Key '${key}' is still running; retry shortly`);
  }


  // ── values that cannot be stored ───────────────────────────────────────────

  /** The 409 of a refused value: where it is (record and line), and the exact ways to store the file. */
  private notStorable(row: ContractRow, file: SampledFile, error: ValueNotStorableError): AppError {
    const line = file.format === 'parquet' ? null : error.row;
    const where = [error.record === null ? null : `record ${error.record}`, line === null ? null : `line ${line}`].filter(Boolean);
    const at = where.length === 2 ? `${where[0]} (${where[1]})` : (where[0] ?? 'an unknown record');
    const { fix, text } = storableFix(row.mode, error.column, error.type, error.value);
    return contractError('VALUE_NOT_STORABLE', `${file.name}: value ${JSON.stringify(error.value)} in column "${error.column}", ${at}, cannot be stored as ${error.type} (${error.message}). ${text}`, {
      file: file.name,
      record: error.record,
      line,
      // (row: the line, as before `record` and `line` were given)
      row: error.row,
      column: error.column,
      value: error.value,
      type: error.type,
      reason: error.message,
      fix,
    });
  }

  /**
   * GET rejects: the values the contract's on_error policy did not store, as one CSV (every file's,
   * or `fileName`'s), read like the contract itself (404 for anyone who may not see it).
   */
  async rejects(caller: Principal, contractId: string, fileName?: string): Promise<Readable> {
    const row = await this.own(caller, contractId);
    if (fileName !== undefined && !(row.files as SampledFile[]).some((f) => f.name === fileName)) {
      throw RequestValidationError.at(['query', 'file'], `this contract has no file '${fileName}'`);
    }
    const keys = (await this.deps.repo.writes(contractId)).filter((w) => w.rejects_path && (fileName === undefined || w.file_name === fileName)).map((w) => w.rejects_path!);
    const blobs = this.deps.blobs;
    return Readable.from(
      (async function* () {
        yield REJECTS_HEADER;
        // Each file starts with the header; it is said once.
        for (const key of keys) yield* (await blobs.get(key, { start: Buffer.byteLength(REJECTS_HEADER) })) as AsyncIterable<Buffer>;
      })(),
    );
  }

  // ── views ──────────────────────────────────────────────────────────────────

  private totals(writes: WriteRow[]) {
    return {
      files: writes.length,
      rows: writes.reduce((n, w) => n + Number(w.rows), 0),
      bytes: writes.reduce((n, w) => n + Number(w.bytes), 0),
      source_bytes: writes.reduce((n, w) => n + Number(w.source_bytes), 0),
      ...rejectedTotals(writes),
    };
  }

  view(row: ContractRow, writes: WriteRow[]) {
    return {
      contract_id: row.contract_id,
      state: row.state,
      mode: row.mode,
      requested_mode: row.requested_mode,
      destination: `${row.workspace}.${row.collection}.${row.dataset}`,
      dataset_exists: row.dataset_id !== null,
      commit_mode: row.commit_mode,
      on_error: row.on_error,
      plan: row.plan as PlanEntry[],
      issues: row.issues as Issue[],
      values: row.sample_values,
      schema_fingerprint: row.schema_fingerprint,
      expires_at: row.expires_at.toISOString(),
      created_at: row.created_at.toISOString(),
      created_by: row.owner,
      // (Contracts from before encodings read everything as UTF-8.)
      files: (row.files as SampledFile[]).map((f) => ({
        name: f.name,
        format: f.format,
        ...(f.format === 'parquet' ? {} : { encoding: f.encoding ?? 'utf-8' }),
        ...(f.csv ? { csv: { ...f.csv, encoding: f.csv.encoding ?? 'utf-8' } } : {}),
      })),
      written: writes.map((w) => ({ file: w.file_name, format: w.format, rows: Number(w.rows), bytes: Number(w.bytes), source_bytes: Number(w.source_bytes), parts: Number(w.parts), rows_rejected: Number(w.rows_rejected), values_nulled: Number(w.values_nulled), written_at: w.created_at.toISOString() })),
      totals: this.totals(writes),
      snapshot: row.snapshot_id === null ? null : { snapshot_id: row.snapshot_id },
      rows_written: row.rows_written === null ? null : Number(row.rows_written),
    };
  }
}
