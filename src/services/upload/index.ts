import type { Authorizer } from '../../core/authz/index.ts';
import type { Catalog } from '../../core/catalog/index.ts';
import type { Db } from '../../core/db/index.ts';
import type { Ingestor } from '../../core/engine/index.ts';
import { serviceModule, type TokenVerifier } from '../../core/http/index.ts';
import type { Logger } from '../../core/logger.ts';
import type { BlobStore } from '../../core/storage/index.ts';
import { Compactor, DEFAULT_COMPACTION, type CompactionSettings } from './compaction.ts';
import { UploadRepo } from './repo.ts';
import { uploadRoutes } from './routes.ts';
import { UploadService, type UploadLimits } from './service.ts';

export { UploadService, DEFAULT_LIMITS, type UploadLimits } from './service.ts';
export { Compactor, COMPACTION_AUTHOR, DEFAULT_COMPACTION, type CompactionPlan, type CompactionResult, type CompactionSettings } from './compaction.ts';

export interface UploadOptions {
  db: Db;
  catalog: Catalog;
  authz: Authorizer;
  ingestor: Ingestor;
  blobs: BlobStore;
  verifier: TokenVerifier;
  scratchDir: string;
  limits?: Partial<UploadLimits>;
  /** Where the contract sweep and failed cleanups are reported. */
  log: Logger;
  /** Told of every committed snapshot (REFRESH ON COMMIT materialized views over the dataset are queued); must not throw. */
  onCommitted?: (datasetId: string) => void;
  /** Compaction thresholds (docs/compaction.md); default DEFAULT_COMPACTION. */
  compaction?: CompactionSettings;
}

/**
 * The upload service: schema contracts, streamed writes and commits; its upkeep sweeps expired
 * contracts and compacts datasets with many small files (the Compactor, also run after commits).
 */
export function createUploadService(options: UploadOptions) {
  const { log } = options;
  const compactor = new Compactor({ catalog: options.catalog, ingestor: options.ingestor, blobs: options.blobs, log: log.child({ module: 'compaction' }), settings: options.compaction ?? DEFAULT_COMPACTION });
  const uploads = new UploadService({ ...options, repo: new UploadRepo(options.db), onCommitted: (datasetId) => {
      compactor.afterCommit(datasetId);
      options.onCommitted?.(datasetId);
    },
  });
  return serviceModule({
    uploads,
    compactor,
    apis: [
      {
        prefix: '/upload',
        title: 'upload service',
        description: 'Schema contracts, streamed writes and atomic commits.',
        routes: [uploadRoutes({ uploads, verifier: options.verifier, scratchDir: options.scratchDir })],
      },
    ],
    upkeep: async () => {
      await uploads.sweepExpired().then(
        (n) => void (n > 0 && log.info({ contracts: n }, 'swept expired upload contracts')),
        (error: unknown) => log.error({ err: error }, 'contract sweep failed'),
      );
      await compactor.scan().catch((error: unknown) => log.error({ err: error }, 'compaction scan failed'));
    },
    stop: () => compactor.stop(),
  });
}
