import path from 'node:path';
import type { AppDeps } from './app.ts';
import type { Config } from './config.ts';
import { loadMasterKey, Sealer } from './core/crypto/index.ts';
import { PublicUrl } from './core/http/index.ts';
import type { Logger } from './core/logger.ts';
import { Ingestor, RowReader, SqlAnalyzer } from './core/engine/index.ts';
import { createBlobStore } from './core/storage/index.ts';
import { createPaymentProcessor } from './services/accounts/index.ts';

/**
 * What the caller settles itself: the database (opened and migrated) and the admin token (main.ts
 * may generate one); besides, any part it wants instead of the configured one, which is then not opened.
 */
export type ProvidedDeps = Pick<AppDeps, 'db' | 'adminToken'> & Partial<AppDeps>;

/**
 * The application's dependencies from the parsed configuration: the one place that maps settings
 * to parts (`log` gets what fails in them off the request path), for `lakeport serve`/`worker`/CLI (main.ts) and tests (test/harness.ts, which provide
 * an in-memory database and engines shared by a test file).
 */
export async function createAppDeps(config: Config, provided: ProvidedDeps, log: Logger): Promise<AppDeps> {
  const tmp = path.join(config.dataDir, 'tmp');
  return {
    sealer: provided.sealer ?? new Sealer(loadMasterKey(config.dataDir, config.masterKey)),
    publicUrl: new PublicUrl(config.publicUrl, config.host, config.port),
    metricsToken: config.metricsToken,
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
    refreshTokenTtlDays: config.refreshTokenTtlDays,
    authCacheSeconds: config.authCacheSeconds,
    blobs: provided.blobs ?? (await createBlobStore({ ...config, log: log.child({ module: 'storage' }) })),
    ingestor: provided.ingestor ?? (await Ingestor.create({ tempDirectory: path.join(tmp, 'duckdb') })),
    reader: provided.reader ?? (await RowReader.create({ tempDirectory: path.join(tmp, 'duckdb-read'), scratchDirectory: path.join(tmp, 'read-out') })),
    scratchDir: path.join(tmp, 'scratch'),
    payments: provided.payments ?? createPaymentProcessor(config.payments),
    plans: config.plans,
    identityProviders: config.identityProviders,
    loginTtlSeconds: config.loginTtlSeconds,
    idpTimeoutSeconds: config.idpTimeoutSeconds,
    analyzer: provided.analyzer ?? (await SqlAnalyzer.create()),
    dns: { servers: config.dnsServers, timeoutMs: config.dnsTimeoutMs, tries: config.dnsTries },
    lifecycle: { undropRetentionMs: config.undropRetentionMs, fileGraceMs: config.fileGraceMs },
    compaction: { ...config.compaction },
    icebergLocations: config.icebergLocations,
    catalogs: { ...config.catalogs },
    jobs: {
      timeoutMs: config.jobTimeoutSeconds * 1000,
      workers: config.jobWorkers,
      memoryLimit: config.jobMemoryLimit,
      threads: config.jobThreads,
      isolation: config.jobIsolation,
      memoryBudgetBytes: config.jobMemoryBudgetBytes,
      perIdentity: config.jobsPerIdentity,
      results: { maxBytes: config.resultMaxBytes, quotaBytes: config.resultQuotaBytes, retentionMs: config.resultRetentionMs },
      external: { stores: { s3: { endpoint: config.externalS3Endpoint } }, maxBytes: config.externalReadMaxBytes },
    },
    ...provided,
  };
}
