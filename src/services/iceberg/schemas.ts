import { z } from 'zod';
import { BinaryBody, mediaResponse } from '../../core/http/index.ts';

/** The request and response shapes of the Iceberg REST catalog (apache/iceberg open-api/rest-catalog-open-api.yaml). */

const StringMap = z.record(z.string(), z.string());
const Namespace = z.array(z.string()).meta({ id: 'IcebergNamespace' });

export const ConfigQuery = z.object({ warehouse: z.string().optional().describe('The warehouse: absent, or `lakeport` (then the answer sets prefix `lakeport`)') });

export const CatalogConfig = z
  .object({
    defaults: StringMap,
    overrides: StringMap,
    endpoints: z.array(z.string()).describe('The endpoints this server supports: the read side only'),
  })
  .meta({ id: 'CatalogConfig' });

/** OAuthClientCredentialsRequest (and what a token exchange sends, refused with unsupported_grant_type). */
export const TokenForm = z
  .looseObject({
    grant_type: z.string().default('client_credentials'),
    client_id: z.string().optional(),
    client_secret: z.string().optional(),
    scope: z.string().optional().describe("`catalog` (the Iceberg clients' default) stands for Lakeport's read scope `odata`"),
  })
  .prefault({});

export const TokenResponse = z
  .object({
    access_token: z.string(),
    token_type: z.literal('bearer'),
    expires_in: z.number().int(),
    issued_token_type: z.literal('urn:ietf:params:oauth:token-type:access_token'),
    refresh_token: z.string().optional(),
    scope: z.string(),
  })
  .meta({ id: 'OAuthTokenResponse' });

export const PrefixParams = z.object({ prefix: z.string().describe('`lakeport`: the one warehouse') });
export const NamespaceParams = z.object({ namespace: z.string().describe('A workspace, or workspace%1Fcollection') });
export const TableParams = NamespaceParams.extend({ table: z.string().describe('A dataset name, or name@label (a tag, a snapshot id, previous)') });

export const ListNamespacesQuery = z.object({
  parent: z.string().optional().describe('A workspace: list its collections'),
  pageToken: z.string().optional().describe('Ignored: every answer holds all results'),
  pageSize: z.string().optional().describe('Ignored: every answer holds all results'),
});

export const ListNamespacesResponse = z.object({ namespaces: z.array(Namespace) }).meta({ id: 'ListNamespacesResponse' });
export const GetNamespaceResponse = z.object({ namespace: Namespace, properties: StringMap }).meta({ id: 'GetNamespaceResponse' });
export const ListTablesResponse = z
  .object({ identifiers: z.array(z.object({ namespace: Namespace, name: z.string() }).meta({ id: 'TableIdentifier' })) })
  .meta({ id: 'ListTablesResponse' });

export const LoadTableQuery = z.object({
  snapshots: z.enum(['all', 'refs']).optional().describe('`refs`: only the snapshots of main and the tags'),
});

export const LoadTableResult = z
  .object({
    'metadata-location': z.string(),
    metadata: z.looseObject({ 'format-version': z.number(), 'table-uuid': z.string() }).describe('TableMetadata (format version 2)'),
    config: StringMap,
  })
  .meta({ id: 'LoadTableResult' });

/** The load answer, sent as text: the stored metadata file's own bytes inside it, never walked by the serializer. */
export const LoadTableResponse = mediaResponse('The table: its metadata location, metadata (format version 2) and config', { 'application/json': LoadTableResult });

export const NoContent = z.null().describe('Exists');

export const FileParams = z.object({
  dataset_id: z.string().describe('The dataset id (ds_…), as in the table location'),
  file: z.string().describe('A file name the table metadata gives'),
});

export const FileResponse = mediaResponse('The file, or the requested byte range (206)', { 'application/octet-stream': BinaryBody });
