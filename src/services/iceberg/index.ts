import type { Authorizer } from '../../core/authz/index.ts';
import type { Catalog } from '../../core/catalog/index.ts';
import { serviceModule, type PublicUrl, type TokenVerifier } from '../../core/http/index.ts';
import type { Logger } from '../../core/logger.ts';
import type { BlobStore } from '../../core/storage/index.ts';
import { IcebergErrorResponse } from './errors.ts';
import { icebergRoutes, type TokenGrant } from './routes.ts';
import { IcebergCatalog } from './service.ts';

export { IcebergCatalog } from './service.ts';

export interface IcebergOptions {
  catalog: Catalog;
  authz: Authorizer;
  blobs: BlobStore;
  verifier: TokenVerifier;
  /** The auth service's token endpoint grants (client credentials), for /iceberg/v1/oauth/tokens. */
  tokens: TokenGrant;
  publicUrl: PublicUrl;
  /** LAKEPORT_ICEBERG_LOCATIONS: `http` (Lakeport's file route, the default) or `storage` (the store's own URIs). */
  locations?: 'http' | 'storage';
  /** Db.changes (PGlite): the file route keeps its lookups while nothing was written. */
  changes?: () => number;
  log: Logger;
}

const PREFIX = '/iceberg';

/** The Iceberg REST catalog: every dataset the caller may read, as an Apache Iceberg table (docs/iceberg.md). */
export function createIcebergService(options: IcebergOptions) {
  const iceberg = new IcebergCatalog({ ...options, locations: options.locations ?? 'http' });
  return serviceModule({
    iceberg,
    apis: [
      {
        prefix: PREFIX,
        title: 'Iceberg REST catalog',
        description: 'The read side of the Apache Iceberg REST Catalog API over every dataset the caller may read, and the files its metadata names.',
        routes: [icebergRoutes({ iceberg, verifier: options.verifier, tokens: options.tokens, blobs: options.blobs })],
        errorBody: IcebergErrorResponse,
      },
    ],
  });
}
