/**
 * `lakeport upload <files…> --to ws.coll.ds`: negotiate a contract from samples, show the plan, accept it,
 * stream every file, commit once. See docs/cli.md.
 */
import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { statIfExists } from '../core/files.ts';
import { argumentError, usage } from './usage.ts';
import {
  FILE_FORMATS,
  LakeportApiError,
  LakeportClient,
  LakeportNetworkError,
  type Contract,
  type DeclaredColumn,
  type FileFormat,
  type FormatOptions,
  type OnErrorPolicy,
  type PatchContractBody,
  type SchemaMode,
  type WriteResult,
} from '../client/index.ts';

export interface UploadIO {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream;
  /** Interactive terminal: ask before accepting a proposed schema, redraw the progress bar. */
  isTTY: boolean;
  /** Where LAKEPORT_URL and the credentials come from (default `process.env`). */
  env?: Record<string, string | undefined>;
  fetch?: typeof globalThis.fetch;
  /** First delay before a commit retry, in ms (default 500, doubled per retry). */
  retryBackoffMs?: number;
}

export const UPLOAD_USAGE = usage(['upload']);

const MODES: readonly SchemaMode[] = ['auto', 'infer', 'declared', 'dataset'];
const ON_ERROR: readonly OnErrorPolicy[] = ['fail', 'null', 'skip'];
type Encoding = NonNullable<FormatOptions['encoding']>;
const ENCODINGS: readonly Encoding[] = ['utf-8', 'latin-1', 'iso-8859-1', 'windows-1252', 'cp1252'];
const DESTINATION = /^[A-Za-z0-9_]+\.[A-Za-z0-9_]+\.[A-Za-z0-9_]+$/;

class UsageError extends Error {}
/** A failure whose one-line message is already final; `hints` are printed below it, one a line. */
class Failure extends Error {
  constructor(
    message: string,
    readonly hints: string[] = [],
  ) {
    super(message);
  }
}

function defaultIO(): UploadIO {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    isTTY: Boolean(process.stdin.isTTY && process.stderr.isTTY),
  };
}

interface Options {
  files: string[];
  destination: string;
  mode: SchemaMode;
  accept: boolean;
  /** Commit mode replace: the new snapshot holds only these files. */
  replace: boolean;
  message?: string;
  format?: FileFormat;
  delimiter?: string;
  encoding?: Encoding;
  columns: DeclaredColumn[];
  ignore: string[];
  sampleBytes?: number;
  /** What the server does with a value the contract cannot store (default: the server's, fail). */
  onError?: OnErrorPolicy;
  /** Where to save the rejected values (on_error null/skip) after the commit. */
  rejects?: string;
}

function parseOptions(args: string[]): Options | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        to: { type: 'string' },
        mode: { type: 'string', default: 'auto' },
        accept: { type: 'boolean', default: false },
        replace: { type: 'boolean', default: false },
        message: { type: 'string' },
        format: { type: 'string' },
        delimiter: { type: 'string' },
        encoding: { type: 'string' },
        column: { type: 'string', multiple: true, default: [] },
        ignore: { type: 'string', multiple: true, default: [] },
        'sample-bytes': { type: 'string' },
        'on-error': { type: 'string' },
        rejects: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    throw new UsageError(argumentError(error, ['upload']).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return 'help';
  if (positionals.length === 0) throw new UsageError('upload needs at least one file');
  if (!values.to) throw new UsageError('--to WORKSPACE.COLLECTION.DATASET is required');
  if (!DESTINATION.test(values.to)) throw new UsageError(`--to must be workspace.collection.dataset, got ${JSON.stringify(values.to)}`);
  const mode = values.mode as SchemaMode;
  if (!MODES.includes(mode)) throw new UsageError(`--mode must be one of ${MODES.join(', ')}, got ${JSON.stringify(values.mode)}`);
  const format = values.format?.toLowerCase() as FileFormat | undefined;
  if (format !== undefined && !FILE_FORMATS.includes(format)) throw new UsageError(`--format must be one of ${FILE_FORMATS.join(', ')}, got ${JSON.stringify(values.format)}`);
  let delimiter = values.delimiter;
  if (delimiter !== undefined) {
    if (delimiter === '\\t' || delimiter.toLowerCase() === 'tab') delimiter = '\t';
    if (Buffer.byteLength(delimiter) !== 1) throw new UsageError(`--delimiter must be one single-byte character, got ${JSON.stringify(values.delimiter)}`);
  }
  const encoding = values.encoding?.toLowerCase() as Encoding | undefined;
  if (encoding !== undefined && !ENCODINGS.includes(encoding)) throw new UsageError(`--encoding must be one of ${ENCODINGS.join(', ')}, got ${JSON.stringify(values.encoding)}`);
  const columns = values.column.map((spec): DeclaredColumn => {
    const at = spec.indexOf('=');
    const name = at < 0 ? '' : spec.slice(0, at).trim();
    let type = at < 0 ? '' : spec.slice(at + 1).trim();
    if (!name || !type) throw new UsageError(`--column must be NAME=TYPE, got ${JSON.stringify(spec)}`);
    const notNull = /\s+NOT\s+NULL$/i.exec(type);
    if (notNull) type = type.slice(0, notNull.index).trim();
    return notNull ? { name, type, nullable: false } : { name, type };
  });
  const seen = new Set<string>();
  for (const { name } of columns) {
    if (seen.has(name)) throw new UsageError(`--column ${name} is given twice`);
    seen.add(name);
  }
  if (mode === 'declared' && columns.length === 0) throw new UsageError('--mode declared needs a --column NAME=TYPE for every column');
  const ignore = values.ignore.map((name) => name.trim());
  if (ignore.some((name) => !name)) throw new UsageError('--ignore needs a column name');
  let sampleBytes: number | undefined;
  if (values['sample-bytes'] !== undefined) {
    sampleBytes = Number(values['sample-bytes']);
    if (!Number.isSafeInteger(sampleBytes) || sampleBytes < 1) throw new UsageError(`--sample-bytes must be a positive whole number, got ${JSON.stringify(values['sample-bytes'])}`);
  }
  const onError = values['on-error']?.toLowerCase() as OnErrorPolicy | undefined;
  if (onError !== undefined && !ON_ERROR.includes(onError)) throw new UsageError(`--on-error must be one of ${ON_ERROR.join(', ')}, got ${JSON.stringify(values['on-error'])}`);
  if (values.rejects !== undefined && !values.rejects.trim()) throw new UsageError('--rejects needs a file name');
  return {
    files: positionals,
    destination: values.to,
    mode,
    accept: values.accept,
    replace: values.replace,
    message: values.message,
    format,
    delimiter,
    columns,
    ignore,
    encoding,
    sampleBytes,
    onError,
    rejects: values.rejects,
  };
}

/** Runs `lakeport upload`; returns the exit code (0 success, 1 failure, 2 usage). */
export async function uploadCommand(args: string[], io: UploadIO = defaultIO()): Promise<number> {
  const fail = (message: string) => io.stderr.write(`lakeport: ${oneLine(message)}\n`);
  let options: Options | 'help';
  try {
    options = parseOptions(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    fail(error.message);
    io.stderr.write(`${UPLOAD_USAGE}\n`);
    return 2;
  }
  if (options === 'help') {
    io.stdout.write(`${UPLOAD_USAGE}\n`);
    return 0;
  }
  try {
    await runUpload(options, io);
    return 0;
  } catch (error) {
    fail(describeError(error));
    if (error instanceof Failure) for (const hint of error.hints) io.stderr.write(`  ${hint}\n`);
    return 1;
  }
}

async function runUpload(options: Options, io: UploadIO): Promise<void> {
  for (const file of options.files) {
    const info = await statIfExists(file);
    if (!info) throw new Failure(`${file}: no such file`);
    if (!info.isFile()) throw new Failure(`${file}: not a file`);
  }
  const client = LakeportClient.fromEnv(io.env ?? process.env, { fetch: io.fetch });
  const format: FormatOptions = {};
  if (options.format) format.type = options.format;
  if (options.delimiter !== undefined) format.delimiter = options.delimiter;
  if (options.encoding !== undefined) format.encoding = options.encoding;

  let contract = await client.negotiate({
    destination: options.destination,
    schema: options.mode === 'declared' ? { mode: 'declared', columns: options.columns } : { mode: options.mode },
    format,
    files: options.files,
    sampleBytes: options.sampleBytes,
    ...(options.replace ? { commitMode: 'replace' as const } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
  });
  let commitStarted = false;
  try {
    const patch: PatchContractBody = { columns: {} };
    if (options.mode !== 'declared') for (const { name, type } of options.columns) patch.columns[name] = { type };
    for (const name of options.ignore) patch.columns[name] = { ...patch.columns[name], ignore: true };
    if (Object.keys(patch.columns).length > 0) contract = await client.patchContract(contract.contract_id, patch);

    printContract(io.stdout, contract);

    const blocking = contract.issues.filter((issue) => issue.severity === 'blocking');
    if (blocking.length > 0) {
      const named = blocking.map((issue) => (issue.column ? `${issue.code} in column ${issue.column}` : issue.code)).join(', ');
      const columns = [...new Set(blocking.map((issue) => issue.column).filter((c): c is string => Boolean(c)))];
      const hint = columns.length > 0 ? `fix the data, or leave the column out with ${columns.map((c) => `--ignore ${c}`).join(' ')}` : 'fix the data and try again';
      throw new Failure(`${blocking.length} blocking issue${blocking.length === 1 ? '' : 's'} (${named}); ${hint}`);
    }

    if (contract.state === 'stale') throw new Failure(`contract ${contract.contract_id} is stale: the dataset changed while negotiating; run the upload again`);
    if (contract.state === 'proposed') {
      let accept = options.accept;
      if (!accept && io.isTTY) accept = await confirm(io, 'Accept this schema? [y/N] ');
      if (!accept) {
        throw new Failure(
          io.isTTY
            ? 'schema not accepted; nothing was uploaded'
            : 'the contract proposes an inferred schema and this is not an interactive terminal; review the plan and rerun with --accept to accept it',
        );
      }
      contract = await client.acceptContract(contract.contract_id, contract.schema_fingerprint);
      if (contract.state !== 'accepted') throw new Failure(`contract ${contract.contract_id} was not accepted (state ${contract.state})`);
      io.stdout.write(`accepted schema ${contract.schema_fingerprint}\n`);
    } else if (contract.state !== 'accepted') {
      throw new Failure(`contract ${contract.contract_id} cannot take data (state ${contract.state})`);
    }

    for (const file of options.files) {
      const name = path.basename(file);
      const { size } = await stat(file);
      const progress = new Progress(io, name, size);
      let result: WriteResult;
      try {
        result = await client.writeFile(contract.contract_id, file, {
          format: options.format,
          onProgress: (sent) => progress.update(sent),
        });
      } catch (error) {
        progress.abort();
        if (error instanceof LakeportApiError && error.code === 'VALUE_NOT_STORABLE') throw new Failure(describeRefusedValue(error, name, contract), refusedValueHints(error));
        throw error;
      }
      const entry = [...result.written].reverse().find((w) => w.file === name);
      progress.finish(entry?.rows, entry ? rejectedText(entry) : '');
    }

    commitStarted = true;
    const idempotencyKey = randomUUID();
    const committed = await client
      .commit(contract.contract_id, idempotencyKey, { message: options.message, retries: 3, backoffMs: io.retryBackoffMs ?? 500 })
      .catch((error: unknown) => {
        if (error instanceof LakeportNetworkError) {
          throw new Failure(
            `${error.message}; the commit of contract ${contract.contract_id} may or may not have happened (idempotency key ${idempotencyKey}); check the dataset's snapshots before uploading again`,
          );
        }
        throw error;
      });
    const dataset = typeof committed.dataset === 'string' && committed.dataset ? committed.dataset : contract.destination;
    const replaced = committed.commit_mode === 'replace' ? ` (replace: the previous snapshot's ${committed.rows_replaced ?? 0} rows are no longer current)` : '';
    io.stdout.write(`snapshot ${committed.snapshot.snapshot_id}: ${committed.rows_written} rows written to ${dataset}${replaced}\n`);
    // Never silent: what the on_error policy did not store is said, and where to get it.
    const rejected = rejectedText(committed);
    if (rejected) {
      let where = `the rejected values: GET ${client.url}${committed.rejects_url ?? `/upload/v2/contracts/${contract.contract_id}/rejects`} (or rerun with --rejects FILE)`;
      if (options.rejects) {
        await client.downloadRejects(contract.contract_id, options.rejects);
        where = `the rejected values are in ${options.rejects}`;
      }
      io.stdout.write(`on_error ${contract.on_error}:${rejected.slice(1)}; ${where}\n`);
    }
  } finally {
    // An upload that stops before its commit leaves nothing behind: abandon the contract (best effort).
    if (!commitStarted) {
      await client.deleteContract(contract.contract_id).catch((error: unknown) => {
        io.stderr.write(`could not abandon contract ${contract.contract_id} (it expires on its own): ${error instanceof Error ? error.message : String(error)}\n`);
      });
    }
  }
}

function describeRefusedValue(error: LakeportApiError, fileName: string, contract: Contract): string {
  const column = error.column ?? '?';
  const type = contract.plan.find((p) => p.column === error.column)?.target_type ?? 'its column type';
  const body = (error.body ?? {}) as { reason?: unknown };
  const reason = typeof body.reason === 'string' ? body.reason : undefined;
  const detail = reason ?? (typeof error.detail === 'string' ? error.detail : error.message);
  const line = error.line ?? error.row;
  const where = error.record !== undefined ? `record ${error.record}${line === undefined ? '' : ` (line ${line})`}` : `row ${error.row ?? '?'}`;
  return `${error.file ?? fileName}: value ${formatValue(error.value)} in column ${column}, ${where} cannot be stored as ${type}: ${detail}`;
}

/** The server's fixes for a refused value, as the flags that apply them. */
function refusedValueHints(error: LakeportApiError): string[] {
  const fix = error.fix;
  if (!fix) return [];
  const ways: [string, string][] = [];
  if (fix.retype) ways.push([fix.retype.cli, `store the column as ${fix.retype.type}`]);
  for (const flag of fix.on_error?.cli ?? []) ways.push([flag, flag.endsWith('null') ? 'store NULL for such values' : 'leave such records out']);
  if (ways.length === 0) return fix.dataset ? [fix.dataset] : [];
  const width = Math.max(...ways.map(([flag]) => flag.length));
  return ['to store the file, rerun with one of:', ...ways.map(([flag, what]) => `  ${flag.padEnd(width)}  (${what})`), ...(fix.dataset ? [`or: ${fix.dataset}`] : [])];
}

/** ", 3 records skipped, 2 values stored as NULL" (empty when nothing was rejected). */
function rejectedText(counts: { rows_rejected?: number; values_nulled?: number }): string {
  const parts: string[] = [];
  const skipped = counts.rows_rejected ?? 0;
  const nulled = counts.values_nulled ?? 0;
  if (skipped > 0) parts.push(`${skipped} record${skipped === 1 ? '' : 's'} skipped`);
  if (nulled > 0) parts.push(`${nulled} value${nulled === 1 ? '' : 's'} stored as NULL`);
  return parts.map((p) => `, ${p}`).join('');
}

function formatValue(value: unknown): string {
  if (value === undefined) return '?';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function describeError(error: unknown): string {
  if (error instanceof Failure) return error.message;
  if (error instanceof LakeportApiError) {
    const where = error.file ? `${error.file}: ` : '';
    return `${where}${error.message} (${error.code})`;
  }
  if (error instanceof Error) return error.message;
  return String(error);
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

// ---------------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------------

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function formatTable(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((row) => (row[i] ?? '').length)));
  return all
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i])))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function printContract(out: NodeJS.WritableStream, contract: Contract): void {
  const requested = contract.requested_mode && contract.requested_mode !== contract.mode ? `, requested ${contract.requested_mode}` : '';
  const replace = contract.commit_mode === 'replace' ? ', commit replaces the dataset' : '';
  const onError = contract.on_error && contract.on_error !== 'fail' ? `, on_error ${contract.on_error}` : '';
  out.write(`contract ${contract.contract_id} for ${contract.destination}: ${contract.state} (mode ${contract.mode}${requested}${replace}${onError})\n`);
  for (const line of dialectLines(contract)) out.write(`${line}\n`);
  out.write('\n');
  out.write(
    `${formatTable(
      ['column', 'action', 'source', 'target'],
      contract.plan.map((p) => [p.column, p.action, p.source_type ?? '-', p.target_type ?? '-']),
    )}\n`,
  );
  if (contract.issues.length > 0) {
    out.write(
      `\n${formatTable(
        ['severity', 'code', 'column', 'message'],
        contract.issues.map((i) => [i.severity, i.code, i.column ?? '-', oneLine(i.file ? `${i.file}: ${i.message}` : i.message)]),
      )}\n`,
    );
  }
  out.write('\n');
}

const shown = (c: string) => `'${c.replace(/\t/g, '\\t').replace(/\r/g, '\\r').replace(/\n/g, '\\n')}'`;

/**
 * How the server reads each text file (once when every file reads alike), e.g.
 * `csv: delimiter ';', quote '"', header yes, encoding latin-1` or `jsonl: encoding utf-8`.
 */
export function dialectLines(contract: Pick<Contract, 'files'>): string[] {
  const files = contract.files ?? [];
  const jsonl = files.filter((f) => f.format === 'jsonl' && f.encoding).map((f) => ({ name: f.name, text: `encoding ${f.encoding}` }));
  return [...sameOnce('csv', files.filter((f) => f.csv).map((f) => ({ name: f.name, text: csvText(f.csv!) }))), ...sameOnce('jsonl', jsonl)];
}

/** `format: text` once when every file's text is the same, otherwise a line per file. */
function sameOnce(format: string, files: { name: string; text: string }[]): string[] {
  if (files.length === 0) return [];
  if (files.every((f) => f.text === files[0].text)) return [`${format}: ${files[0].text}`];
  return files.map((f) => `${format} ${f.name}: ${f.text}`);
}

function csvText(d: NonNullable<Contract['files'][number]['csv']>): string {
  return [
      `delimiter ${shown(d.delimiter)}`,
      `quote ${shown(d.quote)}`,
      ...(d.escape !== d.quote ? [`escape ${shown(d.escape)}`] : []),
      `header ${d.header ? 'yes' : 'no'}`,
      ...(d.date_format ? [`date format ${shown(d.date_format)}`] : []),
    ...(d.timestamp_format ? [`timestamp format ${shown(d.timestamp_format)}`] : []),
    // (A server from before encodings reads UTF-8 and does not say so.)
    ...(d.encoding ? [`encoding ${d.encoding}`] : []),
  ].join(', ');
}

function confirm(io: UploadIO, question: string): Promise<boolean> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: io.stdin, output: io.stderr, terminal: false });
    let answered = false;
    io.stderr.write(question);
    rl.once('line', (line) => {
      answered = true;
      rl.close();
      resolve(/^\s*y(es)?\s*$/i.test(line));
    });
    rl.once('close', () => {
      if (!answered) {
        io.stderr.write('\n');
        resolve(false);
      }
    });
  });
}

export function formatBytes(n: number): string {
  if (n < 1000) return `${n} B`;
  if (n < 1e6) return `${(n / 1e3).toFixed(1)} kB`;
  if (n < 1e9) return `${(n / 1e6).toFixed(1)} MB`;
  return `${(n / 1e9).toFixed(2)} GB`;
}

/** A progress bar on stderr; on a non-TTY one line per file when it is done. */
class Progress {
  readonly #io: UploadIO;
  readonly #name: string;
  readonly #total: number;
  readonly #started = performance.now();
  #sent = 0;
  #lastDraw = 0;
  #drawn = false;

  constructor(io: UploadIO, name: string, total: number) {
    this.#io = io;
    this.#name = name;
    this.#total = total;
  }

  update(sent: number): void {
    this.#sent = sent;
    if (!this.#io.isTTY) return;
    const now = performance.now();
    if (now - this.#lastDraw < 100 && sent < this.#total) return;
    this.#lastDraw = now;
    this.#draw();
  }

  finish(rows: number | undefined, rejected = ''): void {
    const seconds = (performance.now() - this.#started) / 1000;
    const suffix = rows === undefined ? '' : `, ${rows} rows${rejected}`;
    if (this.#io.isTTY) {
      this.#sent = this.#total;
      this.#draw(suffix);
      this.#io.stderr.write('\n');
    } else {
      this.#io.stderr.write(`${this.#name}: ${formatBytes(this.#total)} sent in ${seconds.toFixed(1)} s (${this.#rate()})${suffix}\n`);
    }
  }

  /** Ends a half-drawn bar so the error message starts on its own line. */
  abort(): void {
    if (this.#io.isTTY && this.#drawn) this.#io.stderr.write('\n');
  }

  #rate(): string {
    const seconds = Math.max((performance.now() - this.#started) / 1000, 0.001);
    return `${(this.#sent / 1e6 / seconds).toFixed(1)} MB/s`;
  }

  #draw(suffix = ''): void {
    const width = 30;
    const fraction = this.#total === 0 ? 1 : Math.min(1, this.#sent / this.#total);
    const filled = Math.round(fraction * width);
    const bar = `${'#'.repeat(filled)}${'-'.repeat(width - filled)}`;
    const percent = `${Math.floor(fraction * 100)}%`.padStart(4);
    this.#io.stderr.write(`\r${this.#name} [${bar}] ${percent}  ${formatBytes(this.#sent)} / ${formatBytes(this.#total)}  ${this.#rate()}${suffix}\x1b[K`);
    this.#drawn = true;
  }
}
