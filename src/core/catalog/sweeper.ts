import type { Logger } from '../logger.ts';
import type { BlobStore } from '../storage/index.ts';
import type { Catalog } from './catalog.ts';

/**
 * The catalog's upkeep, run every minute by processes that do background tasks (`lakeport serve` and
 * `worker`): purge datasets dropped longer ago than the undrop window, drop leases past their time,
 * and delete the blobs of queued files whose grace has passed (local and S3 stores alike). Several
 * processes may run it at once: purges skip rows another one holds, and deleting a blob twice is harmless.
 */
export class CatalogSweeper {
  constructor(
    private readonly catalog: Catalog,
    private readonly blobs: BlobStore,
    private readonly log: Logger,
  ) {}

  /** One pass; returns what it did. Never rejects: failures are logged and retried next pass. */
  async run(): Promise<{ datasets: number; blobs: number }> {
    let datasets = 0;
    let blobs = 0;
    try {
      for (;;) {
        const purged = await this.catalog.purgeDroppedDatasets();
        datasets += purged.datasets;
        if (purged.datasets === 0) break;
      }
      await this.catalog.sweepLeases();
      blobs = await this.deleteDueFiles();
    } catch (error) {
      this.log.error({ err: error }, 'catalog sweep failed');
    }
    if (datasets > 0 || blobs > 0) this.log.info({ datasets, blobs }, 'purged dropped datasets and deleted files past their grace');
    return { datasets, blobs };
  }

  /** Deletes the blobs of queued files past their grace; returns how many. */
  async deleteDueFiles(): Promise<number> {
    let deleted = 0;
    for (;;) {
      const due = await this.catalog.dueFileDeletions();
      if (due.length === 0) return deleted;
      for (const path of due) {
        if (await this.catalog.mayDeleteFile(path)) {
          await this.blobs.delete(path);
          await this.catalog.forgetFileDeletion(path);
          deleted++;
        }
      }
    }
  }
}
