import type { Authorizer } from '../../core/authz/index.ts';
import type { Catalog } from '../../core/catalog/index.ts';
import type { Db } from '../../core/db/index.ts';
import type { Ingestor } from '../../core/engine/index.ts';
import { serviceModule, type TokenVerifier } from '../../core/http/index.ts';
import type { Logger } from '../../core/logger.ts';
import type { BlobStore } from '../../core/storage/index.ts';
import { UploadRepo } from './repo.ts';
import { uploadRoutes } from './routes.ts';
import { UploadService, type UploadLimits } from './service.ts';

export { UploadService, DEFAULT_LIMITS, type UploadLimits } from './service.ts';

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
}

/** The upload service: schema contracts, streamed writes and commits; its upkeep sweeps expired contracts. */
export function createUploadService(options: UploadOptions) {
  const { log } = options;
  const uploads = new UploadService({ ...options, repo: new UploadRepo(options.db) });
  return serviceModule({
    uploads,
    apis: [
      {
        prefix: '/upload',
        title: 'upload service',
        description: 'Schema contracts, streamed writes and atomic commits.',
        routes: [uploadRoutes({ uploads, verifier: options.verifier, scratchDir: options.scratchDir })],
      },
    ],
    upkeep: () =>
      uploads.sweepExpired().then(
        (n) => void (n > 0 && log.info({ contracts: n }, 'swept expired upload contracts')),
        (error: unknown) => log.error({ err: error }, 'contract sweep failed'),
      ),
  });
}
