import type { Authorizer } from '../../core/authz/index.ts';
import type { Catalog } from '../../core/catalog/index.ts';
import type { RowReader } from '../../core/engine/index.ts';
import type { Db } from '../../core/db/index.ts';
import type { TokenVerifier } from '../../core/http/index.ts';
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
  baseUrl: () => string;
  workspaceActive(name: string): Promise<boolean>;
  db: Db;
  /** Where pages read ahead and cursors report what failed off the request path. */
  log: Logger;
}

/** The OData v4 service: datasets as entity sets, for BI tools and OData clients. */
export function createODataService(options: ODataOptions) {
  const odata = new ODataService({ ...options, access: new DatasetAccessLookup(options.db) });
  return { odata, routes: odataRoutes({ odata, verifier: options.verifier, clients: options.clients, baseUrl: options.baseUrl, pages: new RowPages({ odata, readAhead: new ReadAhead(undefined, options.log), cursors: new RangeCursors(), log: options.log }) }) };
}
