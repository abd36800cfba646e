import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import type { Catalog, DataFile, DataFileInput, Dataset, Snapshot } from '../../core/catalog/index.ts';
import type { Ingestor } from '../../core/engine/index.ts';
import { appError, isAppError } from '../../core/errors/index.ts';
import { uploadError } from './errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { BlobStore } from '../../core/storage/index.ts';

/** The thresholds of docs/compaction.md (LAKEPORT_COMPACTION_*). */
export interface CompactionSettings {
  /** Automatic compaction after commits and in the periodic scan; ALTER DATASET … COMPACT works either way. */
  automatic: boolean;
  /** Automatic compaction starts when the current snapshot has this many small files (after the last large one). */
  minSmallFiles: number;
  /** A file smaller than this is small. */
  smallFileBytes: number;
  /** Compaction writes files of about this size; a file this large or larger is never rewritten. */
  targetFileBytes: number;
  /** How long after a commit the automatic check runs (commits in between push it back). */
  delayMs: number;
}

export const DEFAULT_COMPACTION: CompactionSettings = {
  automatic: true,
  minSmallFiles: 32,
  smallFileBytes: 8 * 2 ** 20,
  targetFileBytes: 128 * 2 ** 20,
  delayMs: 5_000,
};

/** The author of automatic compactions' snapshots. */
export const COMPACTION_AUTHOR = 'lakeport:compaction';

/** How long a lease lasts without renewal; renewed every third of it while a compaction runs. */
const LEASE_MS = 5 * 60_000;
/** A commit that lands during a compaction is folded in (its files rewritten too) this many times at most. */
const MAX_ATTEMPTS = 4;
/** Datasets one periodic scan compacts at most, of at most this many with enough small files. */
const SCAN_LIMIT = 20;
const SCAN_CANDIDATES = 500;

/** Which files a compaction rewrites: a run at the end of the current snapshot (see `planOf`). */
export interface CompactionPlan {
  dataset: Dataset;
  snapshot: Snapshot | undefined;
  /** The current snapshot's files, in the catalog's order. */
  files: DataFile[];
  /** The run rewritten: `files.slice(from)`. */
  from: number;
  /** Of the run, the files smaller than the small-file size. */
  smallFiles: number;
  /** The run's files by the output file each becomes. */
  groups: DataFile[][];
  /** How many files the run becomes. */
  outputs: number;
}

export interface CompactionResult {
  status: 'compacted' | 'nothing_to_compact';
  dataset: string;
  /** The maintenance snapshot (compacted), or the current one. */
  snapshotId: number | null;
  filesBefore: number;
  filesAfter: number;
  filesRewritten: number;
  filesWritten: number;
  rows: number;
  bytesBefore: number;
  bytesAfter: number;
  /** Commits that landed during the compaction and were folded in. */
  foldedCommits: number;
}

const label = (d: Dataset) => `${d.workspace}.${d.collection}.${d.name}`;

/**
 * Compaction of datasets fed by small appends (docs/compaction.md): the small files at the end of a
 * dataset's current snapshot are rewritten with DuckDB into files of about the target size and
 * committed as a maintenance snapshot — the same rows in the same order (OData's row numbers are
 * positions), no rows added or removed, so `@previous` skips it. Old files stay: older snapshots
 * still read them; only snapshot expiry deletes them.
 *
 * One compaction per dataset at a time across processes: a lease in the catalog. Automatic
 * compaction runs a while after commits (`afterCommit`, debounced) and in the periodic scan (`scan`,
 * the upkeep of `lakeport serve` and `lakeport worker`).
 */
export class Compactor {
  private readonly holder = `${process.pid}:${crypto.randomBytes(6).toString('hex')}`;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly running = new Set<Promise<unknown>>();
  /** Datasets found not due, with the current snapshot they were found at (bounded: cleared when large). */
  private readonly notDue = new Map<string, number | null>();
  private stopped = false;

  constructor(
    private readonly deps: { catalog: Catalog; ingestor: Ingestor; blobs: BlobStore; log: Logger; settings: CompactionSettings },
  ) {}

  get settings(): CompactionSettings {
    return this.deps.settings;
  }

  /**
   * The run a compaction would rewrite. Files are read in the catalog's order (by the snapshot that
   * added them, then path), and the rewritten files enter the new snapshot after every file it keeps;
   * so the run is a tail of that order: from the first small file after the last file of the target
   * size or larger (those are never rewritten) to the end.
   */
  async planOf(datasetKey: string | Dataset): Promise<CompactionPlan> {
    const dataset = typeof datasetKey === 'string' ? await this.deps.catalog.getDatasetById(datasetKey) : datasetKey;
    if (dataset.current_snapshot_id === null) return { dataset, snapshot: undefined, files: [], from: 0, smallFiles: 0, groups: [], outputs: 0 };
    const [snapshot, files] = await Promise.all([this.deps.catalog.getSnapshot(dataset.current_snapshot_id), this.deps.catalog.snapshotFiles(dataset.current_snapshot_id)]);
    const { smallFileBytes, targetFileBytes } = this.deps.settings;

    let lastLarge = -1;
    files.forEach((f, i) => void (Number(f.size_bytes) >= targetFileBytes && (lastLarge = i)));
    let from = files.findIndex((f, i) => i > lastLarge && Number(f.size_bytes) < smallFileBytes);
    if (from < 0) from = files.length;
    const run = files.slice(from);
    const outputs = run.length < 2 ? run.map((f) => [f]) : await this.outputGroups(dataset, run);
    return { dataset, snapshot, files, from, smallFiles: run.filter((f) => Number(f.size_bytes) < smallFileBytes).length, groups: outputs, outputs: outputs.length };
  }

  /** Whether the plan merges anything (some output from two files or more). */
  static merges(plan: CompactionPlan): boolean {
    return plan.groups.some((g) => g.length > 1);
  }

  /** Whether automatic compaction would compact this plan. */
  due(plan: CompactionPlan): boolean {
    return plan.smallFiles >= this.deps.settings.minSmallFiles && Compactor.merges(plan);
  }

  /**
   * Compacts the dataset now (ALTER DATASET … COMPACT, or automatic with `onlyIfDue`). 409
   * COMPACTION_IN_PROGRESS when another compaction of it runs; 409 COMMIT_CONFLICT when the dataset
   * was overwritten or redefined meanwhile (nothing is committed then).
   */
  async compact(datasetId: string, author: string, options: { onlyIfDue?: boolean } = {}): Promise<CompactionResult> {
    const { catalog } = this.deps;
    // One holder per compaction, so two in this process exclude each other too.
    const holder = `${this.holder}:${crypto.randomBytes(4).toString('hex')}`;
    if (!(await catalog.takeMaintenanceLease(datasetId, holder, LEASE_MS))) {
      const dataset = await catalog.getDatasetById(datasetId);
      throw uploadError('COMPACTION_IN_PROGRESS', `A compaction of ${label(dataset)} is already running; try again when it is done`);
    }
    let lost = false;
    const renew = setInterval(() => {
      void catalog.renewMaintenanceLease(datasetId, holder, LEASE_MS).then(
        (held) => void (held || (lost = true)),
        (error: unknown) => this.deps.log.warn({ err: error, dataset_id: datasetId }, 'could not renew a compaction lease'),
      );
    }, LEASE_MS / 3);
    renew.unref();
    try {
      return await this.compactHeld(datasetId, author, options, () => lost);
    } finally {
      clearInterval(renew);
      await catalog.releaseMaintenanceLease(datasetId, holder).catch((error: unknown) => this.deps.log.warn({ err: error, dataset_id: datasetId }, 'could not release a compaction lease'));
    }
  }

  private async compactHeld(datasetId: string, author: string, options: { onlyIfDue?: boolean }, lost: () => boolean): Promise<CompactionResult> {
    const { catalog, blobs, settings } = this.deps;
    let plan = await this.planOf(datasetId);
    const { dataset } = plan;
    const run = plan.files.slice(plan.from);
    const nothing = (): CompactionResult => ({
      status: 'nothing_to_compact',
      dataset: label(dataset),
      snapshotId: dataset.current_snapshot_id,
      filesBefore: plan.files.length,
      filesAfter: plan.files.length,
      filesRewritten: 0,
      filesWritten: 0,
      rows: 0,
      bytesBefore: sum(plan.files, 'size_bytes'),
      bytesAfter: sum(plan.files, 'size_bytes'),
      foldedCommits: 0,
    });
    if (!Compactor.merges(plan) || (options.onlyIfDue && !this.due(plan))) return nothing();
    let pendingGroups: DataFile[][] = plan.groups;

    const stem = `lake/${dataset.workspace}/${dataset.collection}/${dataset.name}/compacted-${crypto.randomUUID()}`;
    const written: DataFileInput[] = [];
    const replaces: Record<string, string[]> = {};
    let removed: DataFile[] = [];
    let pending = run;
    let folded = 0;
    try {
      for (let attempt = 1; ; attempt++) {
        for (const group of pendingGroups) {
          const file = await this.rewrite(plan.dataset, group, `${stem}-${String(written.length).padStart(5, '0')}.parquet`);
          written.push(file);
          replaces[file.path] = group.map((f) => f.file_id);
        }
        removed = [...removed, ...pending];
        if (lost()) throw uploadError('COMPACTION_IN_PROGRESS', `The compaction lease of ${label(dataset)} was lost; nothing was committed`);
        try {
          const snapshot = await catalog.commitSnapshot({
            dataset: dataset.dataset_id,
            expectedParent: plan.snapshot!.snapshot_id,
            expectedDefinitionVersion: plan.dataset.definition_version,
            operation: 'maintenance',
            author,
            message: `compaction: ${removed.length} files rewritten into ${written.length}`,
            addFiles: written,
            removeFileIds: removed.map((f) => f.file_id),
            replaces,
          });
          const filesAfter = plan.files.length - removed.length + written.length;
          const kept = plan.files.filter((f) => !removed.some((r) => r.file_id === f.file_id));
          this.deps.log.info({ dataset: label(dataset), snapshot_id: snapshot.snapshot_id, files_rewritten: removed.length, files_written: written.length }, 'compacted');
          return {
            status: 'compacted',
            dataset: label(dataset),
            snapshotId: snapshot.snapshot_id,
            filesBefore: plan.files.length,
            filesAfter,
            filesRewritten: removed.length,
            filesWritten: written.length,
            rows: sum(removed, 'row_count'),
            bytesBefore: sum(plan.files, 'size_bytes'),
            bytesAfter: sum(kept, 'size_bytes') + written.reduce((n, f) => n + f.size_bytes, 0),
            foldedCommits: folded,
          };
        } catch (error) {
          if (!isAppError(error, 'COMMIT_CONFLICT') || attempt >= MAX_ATTEMPTS) throw error;
          // A commit landed meanwhile. Appends only add files after ours: rewrite theirs too (so the
          // order stays) and commit again. Anything else (an overwrite, a delete, another compaction) ends it.
          const next = await this.planOf(dataset.dataset_id);
          const before = new Set(plan.files.map((f) => f.file_id));
          const stillLive = new Set(next.files.map((f) => f.file_id));
          const added = next.files.filter((f) => !before.has(f.file_id));
          const unchanged = plan.files.every((f) => stillLive.has(f.file_id)) && next.files.slice(0, plan.files.length).every((f, i) => f.file_id === plan.files[i].file_id);
          if (!unchanged || next.dataset.definition_version !== plan.dataset.definition_version) {
            throw appError('COMMIT_CONFLICT', `${label(dataset)} was rewritten or redefined during its compaction; nothing was committed, compact again`);
          }
          folded++;
          pending = added;
          pendingGroups = groups(added, settings.targetFileBytes);
          plan = { ...next, files: next.files };
        }
      }
    } catch (error) {
      // Never named by the catalog: nothing reads them.
      for (const file of written) await blobs.delete(file.path).catch((e: unknown) => this.deps.log.warn({ err: e, key: file.path }, 'could not remove a file of a failed compaction'));
      throw error;
    }
  }

  /**
   * The run cut into groups of about the target size, with a cut where the previous version
   * (`@previous`) ends: that version holds every input of the groups before the cut, so its reads
   * take their outputs too (Catalog.readFiles), not its thousands of small files.
   */
  private async outputGroups(dataset: Dataset, files: DataFile[]): Promise<DataFile[][]> {
    const previous = await this.deps.catalog.resolveSnapshotOf(dataset, { kind: 'previous' }).catch((error: unknown) => {
      if (isAppError(error, 'SNAPSHOT_NOT_FOUND')) return undefined;
      throw error;
    });
    // The leading files of the run that the previous version reads too (as itself or as a compacted file).
    const read = previous ? new Set((await this.deps.catalog.readFiles(previous.snapshot_id)).map((f) => f.file_id)) : new Set<string>();
    let cut = 0;
    while (cut < files.length && read.has(files[cut].file_id)) cut++;
    if (cut === 0 || cut === files.length) return groups(files, this.deps.settings.targetFileBytes);
    return [...groups(files.slice(0, cut), this.deps.settings.targetFileBytes), ...groups(files.slice(cut), this.deps.settings.targetFileBytes)];
  }

  /** One output file from a group of input files (rows in their order); its row count must be theirs. */
  private async rewrite(dataset: Dataset, group: DataFile[], key: string): Promise<DataFileInput> {
    const { blobs, ingestor } = this.deps;
    const paths = await Promise.all(group.map((f) => blobs.localPath(f.path)));
    const local = await blobs.tempPath('.parquet');
    try {
      const out = await ingestor.rewrite({ files: paths, columns: dataset.columns, destination: local });
      const expected = sum(group, 'row_count');
      if (out.rows !== expected) throw new Error(`compaction of ${label(dataset)} wrote ${out.rows} rows where its files hold ${expected}`);
      await blobs.putFile(key, local);
      return { path: key, row_count: out.rows, size_bytes: out.bytes, column_stats: out.stats };
    } finally {
      await fs.rm(local, { force: true });
    }
  }

  // ── automatic ──

  /** After a commit to the dataset: checks it once commits have paused for `delayMs`, and compacts it when due. */
  afterCommit(datasetId: string): void {
    if (!this.deps.settings.automatic || this.stopped) return;
    clearTimeout(this.timers.get(datasetId));
    const timer = setTimeout(() => {
      this.timers.delete(datasetId);
      this.track(this.compactIfDue(datasetId));
    }, this.deps.settings.delayMs);
    timer.unref();
    this.timers.set(datasetId, timer);
  }

  /** The periodic scan: every dataset whose current snapshot has enough small files, one after another. */
  async scan(): Promise<number> {
    if (!this.deps.settings.automatic || this.stopped) return 0;
    const { smallFileBytes, minSmallFiles } = this.deps.settings;
    const candidates = await this.deps.catalog.datasetsWithSmallFiles({ smallBytes: smallFileBytes, minFiles: minSmallFiles, limit: SCAN_CANDIDATES });
    let compacted = 0;
    for (const { dataset_id } of candidates) {
      if (this.stopped || compacted >= SCAN_LIMIT) break;
      const done = this.compactIfDue(dataset_id);
      this.track(done);
      if ((await done) === 'compacted') compacted++;
    }
    return compacted;
  }

  /**
   * Plans without the lease first: a dataset whose small files cannot be merged (say, before a large
   * file) is remembered with its current snapshot and not looked at again until that changes.
   */
  private async compactIfDue(datasetId: string): Promise<CompactionResult['status'] | 'skipped'> {
    try {
      const dataset = await this.deps.catalog.getDatasetById(datasetId);
      if (this.notDue.get(datasetId) === dataset.current_snapshot_id) return 'nothing_to_compact';
      if (!this.due(await this.planOf(dataset))) {
        if (this.notDue.size >= 10_000) this.notDue.clear();
        this.notDue.set(datasetId, dataset.current_snapshot_id);
        return 'nothing_to_compact';
      }
      this.notDue.delete(datasetId);
      return (await this.compact(datasetId, COMPACTION_AUTHOR, { onlyIfDue: true })).status;
    } catch (error) {
      if (isAppError(error, 'COMPACTION_IN_PROGRESS', 'COMMIT_CONFLICT', 'DATASET_NOT_FOUND')) return 'skipped';
      this.deps.log.error({ err: error, dataset_id: datasetId }, 'automatic compaction failed');
      return 'skipped';
    }
  }

  private track(work: Promise<unknown>): void {
    this.running.add(work);
    void work.finally(() => this.running.delete(work));
  }

  /** Cancels pending checks and waits for compactions under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    await Promise.allSettled([...this.running]);
  }
}

/** Consecutive files grouped into outputs of about `target` bytes (their sizes added; at least one file each). */
function groups(files: DataFile[], target: number): DataFile[][] {
  const out: DataFile[][] = [];
  let current: DataFile[] = [];
  let bytes = 0;
  for (const file of files) {
    if (current.length > 0 && bytes + Number(file.size_bytes) > target) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(file);
    bytes += Number(file.size_bytes);
  }
  if (current.length > 0) out.push(current);
  return out;
}

function sum(files: DataFile[], field: 'row_count' | 'size_bytes'): number {
  return files.reduce((n, f) => n + Number(f[field]), 0);
}
