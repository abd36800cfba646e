import type { Authorizer } from '../../core/authz/index.ts';
import type { Catalog } from '../../core/catalog/index.ts';
import type { RowReader } from '../../core/engine/index.ts';
import { serviceModule, type PublicUrl, type TokenVerifier } from '../../core/http/index.ts';
import type { TableWrites } from '../../core/db/writes.ts';
import type { Logger } from '../../core/logger.ts';
import type { BlobStore } from '../../core/storage/index.ts';
import type { ClientAuthenticator } from './auth.ts';
import { RangeCursors } from './cursor.ts';
import { DatasetAccessLookup } from './lookup.ts';
import { RowPages } from './pages.ts';
import { ReadAhead } from './read-ahead.ts';
import { odataRoutes } from './routes.ts';
import { ODataService } from './service.ts';

export { ODataService } from './service.ts';

export interface ODataOptions {
  catalog: Catalog;
  authz: Authorizer;
  blobs: BlobStore;
  reader: RowReader;
  verifier: TokenVerifier;
  clients: ClientAuthenticator;
  publicUrl: PublicUrl;
  /** Db.changes: lets a page's access lookup be kept while nothing was written. */
  changes?: () => number;
  /** Db.writes: lets the readable listings be kept until this process writes the catalog. */
  writes?: TableWrites;
  /** Where pages read ahead and cursors report what failed off the request path. */
  log: Logger;
}

const PREFIX = '/odata';

/** The OData v4 service: datasets as entity sets, for BI tools and OData clients. */
export function createODataService(options: ODataOptions) {
  const { authz, catalog, changes } = options;
  const baseUrl = () => options.publicUrl.service(PREFIX);
  const odata = new ODataService({ ...options, access: new DatasetAccessLookup({ authz, catalog, changes }) });
  const pages = new RowPages({ odata, readAhead: new ReadAhead(undefined, options.log), cursors: new RangeCursors(), log: options.log });
  return serviceModule({
    odata,
    apis: [
      {
        prefix: PREFIX,
        title: 'OData service',
        description: 'OData v4 over every dataset the caller may read, for Power BI, Excel and scripts.',
        routes: [odataRoutes({ odata, verifier: options.verifier, clients: options.clients, baseUrl, pages })],
      },
    ],
  });
}
