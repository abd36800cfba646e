import type { Authorizer } from '../../core/authz/index.ts';
import type { Catalog } from '../../core/catalog/index.ts';
import type { Db } from '../../core/db/index.ts';
import type { Ingestor } from '../../core/engine/index.ts';
import type { TokenVerifier } from '../../core/http/index.ts';
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
}

export function createUploadService(options: UploadOptions) {
  const uploads = new UploadService({ ...options, repo: new UploadRepo(options.db) });
  return { uploads, routes: uploadRoutes({ uploads, verifier: options.verifier, scratchDir: options.scratchDir }) };
}
