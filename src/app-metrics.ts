import { Counter, Gauge, type Registry } from 'prom-client';
import type { Db } from './core/db/index.ts';
import type { Ingestor, QueryEngine, RowReader } from './core/engine/index.ts';
import type { Logger } from './core/logger.ts';
import type { JobsService, WorkerPool } from './services/jobs/index.ts';
import type { UploadService } from './services/upload/index.ts';

/** What the services' metrics are read from, at each scrape. */
export interface ObservedParts {
  db: Db;
  jobs: JobsService;
  workers: WorkerPool;
  uploads: UploadService;
  queryEngine: QueryEngine;
  ingestor: Ingestor;
  reader: RowReader;
  log: Logger;
}

/** A part that does not answer within this long is left out of a scrape (counted in lakeport_metrics_collect_failures_total). */
const COLLECT_TIMEOUT_MS = 1_000;

/**
 * The services' metrics (docs/deploy.md, "Metrics"), read from the parts when Prometheus scrapes.
 * `lakeport_jobs` and `lakeport_job_queue_depth` count the whole cluster (every process reports
 * the same: aggregate with max, not sum); the rest are this process's.
 */
export function registerServiceMetrics(registry: Registry, parts: ObservedParts): void {
  const registers = [registry];
  const failures = new Counter({ name: 'lakeport_metrics_collect_failures_total', help: 'Scrapes that could not read a part (its metrics keep their last value)', labelNames: ['part'], registers });
  /** Reads a part within the time limit; undefined (and counted) when it fails. */
  const read = async <T>(part: string, fn: () => Promise<T>): Promise<T | undefined> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([fn(), new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${COLLECT_TIMEOUT_MS} ms`)), COLLECT_TIMEOUT_MS)))]);
    } catch (error) {
      failures.inc({ part });
      parts.log.warn({ err: error, part }, 'a metric could not be read');
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  };

  // The metadata database's connections: first, so that they are read before this scrape's own queries start.
  new Gauge({
    name: 'lakeport_db_connections',
    help: "This process's connections to the metadata database (PGlite: its one session), by state",
    labelNames: ['state'],
    registers,
    collect() {
      const { total, idle } = parts.db.connections();
      this.set({ state: 'idle' }, idle);
      this.set({ state: 'in_use' }, total - idle);
    },
  });
  new Gauge({
    name: 'lakeport_db_connections_waiting',
    help: 'Queries of this process waiting for a metadata database connection',
    registers,
    collect() {
      this.set(parts.db.connections().waiting);
    },
  });

  // Jobs: the cluster's queue (one query for both gauges), this process's slots and outcomes.
  let active: Promise<{ queued: number; running: number } | undefined> | undefined;
  /** One database read per scrape, shared by the two gauges that show it. */
  const activeJobs = () => {
    active ??= read('jobs', () => parts.jobs.active()).finally(() => setImmediate(() => (active = undefined)));
    return active;
  };
  new Gauge({
    name: 'lakeport_jobs',
    help: 'Jobs queued and running in the whole cluster, by state',
    labelNames: ['state'],
    registers,
    async collect() {
      const counts = await activeJobs();
      if (counts) for (const state of ['queued', 'running'] as const) this.set({ state }, counts[state]);
    },
  });
  new Gauge({
    name: 'lakeport_job_queue_depth',
    help: 'Jobs waiting for a worker in the whole cluster',
    registers,
    async collect() {
      const counts = await activeJobs();
      if (counts) this.set(counts.queued);
    },
  });
  new Counter({
    name: 'lakeport_jobs_finished_total',
    help: "Jobs this process's workers ended, by outcome (requeued: its query process stopped under it)",
    labelNames: ['state'],
    registers,
    collect() {
      this.reset();
      for (const [state, n] of Object.entries(parts.workers.ended)) this.inc({ state }, n);
    },
  });
  new Gauge({
    name: 'lakeport_job_worker_slots',
    help: 'Job slots of this process (LAKEPORT_JOB_WORKERS; 0 when it runs no jobs), by state',
    labelNames: ['state'],
    registers,
    collect() {
      const { total, busy } = parts.workers.slots();
      this.set({ state: 'busy' }, busy);
      this.set({ state: 'free' }, Math.max(0, total - busy));
    },
  });

  // Uploads.
  new Counter({
    name: 'lakeport_upload_bytes_total',
    help: 'Bytes of files this process received and staged (as sent, before conversion to Parquet)',
    registers,
    collect() {
      this.reset();
      this.inc(parts.uploads.received.bytes);
    },
  });
  new Counter({
    name: 'lakeport_upload_writes_total',
    help: 'Files this process received and staged',
    registers,
    collect() {
      this.reset();
      this.inc(parts.uploads.received.writes);
    },
  });

  // DuckDB: the engines of this process and the query process's sandboxes.
  new Gauge({
    name: 'lakeport_duckdb_memory_bytes',
    help: "DuckDB memory in use by this process's engines (ingest: uploads and downloads; read: OData pages)",
    labelNames: ['engine'],
    registers,
    async collect() {
      const [ingest, reader] = await Promise.all([read('duckdb', () => parts.ingestor.memoryBytes()), read('duckdb', () => parts.reader.memoryBytes())]);
      if (ingest !== undefined) this.set({ engine: 'ingest' }, ingest);
      if (reader !== undefined) this.set({ engine: 'read' }, reader);
    },
  });
  let engineStats: ReturnType<QueryEngine['stats']> | undefined;
  const queryEngine = () => {
    engineStats ??= parts.queryEngine.stats().finally(() => setImmediate(() => (engineStats = undefined)));
    return engineStats;
  };
  new Gauge({
    name: 'lakeport_duckdb_sandboxes',
    help: 'DuckDB sandboxes of job queries in this process (or its query process), by state: idle (warm, pooled) or leased (running a job)',
    labelNames: ['state'],
    registers,
    async collect() {
      const stats = await queryEngine();
      this.set({ state: 'idle' }, stats.idle);
      this.set({ state: 'leased' }, stats.leased);
    },
  });
  new Gauge({
    name: 'lakeport_query_process_resident_bytes',
    help: 'Resident memory of the query process that runs job queries (LAKEPORT_JOB_ISOLATION=process; 0 while none runs)',
    registers,
    async collect() {
      const stats = await queryEngine();
      if (stats.processResidentBytes !== undefined) this.set(stats.processResidentBytes);
    },
  });

}
