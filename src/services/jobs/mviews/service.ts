import type { Catalog } from '../../../core/catalog/index.ts';
import { newId } from '../../../core/crypto/index.ts';
import type { PermissionPair } from '../../../core/db/index.ts';
import { silentLogger, type Logger } from '../../../core/logger.ts';
import type { JobRow } from '../repo.ts';
import type { MaterializedViewRepo, MaterializedViewRow, RefreshTrigger } from './repo.ts';

export interface MaterializedViewsDeps {
  views: MaterializedViewRepo;
  catalog: Catalog;
  /** A refresh job's time limit. */
  timeoutMs: number;
  /** Wakes this process's worker pool (a refresh was queued). */
  notify(): void;
  log?: Logger;
}

/** Who a refresh job belongs to: its owner may poll it; the refresh itself always runs with the view owner's grants. */
export interface RefreshRequester {
  identity: string;
  permissions: PermissionPair[];
}

/** How often the scheduler looks for REFRESH EVERY views that are due. */
export const DEFAULT_SCHEDULER_TICK_MS = 1_000;

/**
 * Queues refreshes of materialized views: on request (CREATE, REFRESH), by schedule (REFRESH EVERY:
 * a tick claims due views by compare-and-set, so with several serve and worker processes each due
 * refresh is queued once), and after a commit to a source (REFRESH ON COMMIT). At most one refresh
 * of a view is queued or running at any time (the jobs table's partial unique index): asking again
 * returns the one in progress.
 */
export class MaterializedViews {
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private readonly log: Logger;

  constructor(private readonly deps: MaterializedViewsDeps) {
    this.log = deps.log ?? silentLogger;
  }

  get repo(): MaterializedViewRepo {
    return this.deps.views;
  }

  async enqueue(datasetId: string, label: string, trigger: RefreshTrigger, by: RefreshRequester): Promise<{ job: JobRow; created: boolean }> {
    const queued = await this.deps.views.enqueueRefresh({
      execution_id: newId('job'),
      owner: by.identity,
      sql_text: `REFRESH MATERIALIZED VIEW ${label}`,
      parameters: {},
      client_info: JSON.stringify({ refresh: trigger }),
      permissions: JSON.stringify(by.permissions),
      timeout_ms: this.deps.timeoutMs,
      refresh_of: datasetId,
    });
    if (queued.created) this.deps.notify();
    return queued;
  }

  /**
   * Queues the refresh of every REFRESH EVERY view that is due, and of every REFRESH ON COMMIT view
   * a source commit left behind without one (behind); returns how many were queued.
   */
  async tick(): Promise<number> {
    if (this.ticking) return 0;
    this.ticking = true;
    try {
      let queued = 0;
      for (const view of await this.deps.views.claimDue()) if (await this.enqueueFor(view, 'schedule')) queued++;
      for (const view of await this.behind()) if (await this.enqueueFor(view, 'on commit')) queued++;
      return queued;
    } finally {
      this.ticking = false;
    }
  }

  /**
   * The REFRESH ON COMMIT views with a source whose current snapshot is not the one their last
   * refresh attempt read, and no refresh queued or running: a commit whose refresh was never queued
   * (the process stopped in between) or that landed while a refresh read the snapshot before it.
   */
  private async behind(): Promise<MaterializedViewRow[]> {
    const idle = await this.deps.views.idleOnCommit();
    if (idle.length === 0) return [];
    const current = await this.deps.catalog.currentSnapshotsOf([...new Set(idle.flatMap((v) => Object.keys(v.refreshed_from ?? {})))]);
    return idle.filter((v) => Object.entries(v.refreshed_from ?? {}).some(([id, read]) => current.has(id) && current.get(id) !== read));
  }

  /** Queues a refresh of the view as its owner; whether a new one was queued. */
  private async enqueueFor(view: MaterializedViewRow, trigger: RefreshTrigger): Promise<boolean> {
    const dataset = await this.deps.catalog.findDataset(view.dataset_id);
    if (!dataset) return false;
    const { created } = await this.enqueue(view.dataset_id, `${dataset.workspace}.${dataset.collection}.${dataset.name}`, trigger, { identity: view.owner, permissions: view.owner_permissions });
    return created;
  }

  /** A snapshot was committed to `datasetId`: queue the refresh of the REFRESH ON COMMIT views that read it. */
  async committed(datasetId: string): Promise<void> {
    for (const view of await this.deps.views.dependents(datasetId)) await this.enqueueFor(view, 'on commit');
  }

  /** As committed(), for a caller that must not wait or fail (an upload's commit): failures go to the log. */
  committedInBackground(datasetId: string): void {
    void this.committed(datasetId).catch((error: unknown) => this.log.error({ err: error, dataset_id: datasetId }, 'could not queue the ON COMMIT refreshes of views over a dataset'));
  }

  start(tickMs = DEFAULT_SCHEDULER_TICK_MS): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      void this.tick().catch((error: unknown) => this.log.warn({ err: error }, 'materialized view scheduler tick failed; the next one tries again'));
    }, tickMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
