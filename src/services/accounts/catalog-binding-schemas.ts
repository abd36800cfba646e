import { z } from 'zod';
import { DEFAULT_SCOPE, DEFAULT_TOKEN_PATH } from './iceberg-rest.ts';

/** Request and answer shapes of the catalog binding endpoints on /control (docs/catalog-bindings.md). */

export const CATALOG_KINDS = ['native', 'iceberg_rest'] as const;
export type CatalogKind = (typeof CATALOG_KINDS)[number];

/** What reads show in place of a secret value. */
export const REDACTED = 'redacted';

const httpUrl = z
  .url({ protocol: /^https?$/, message: 'must be an http:// or https:// URL' })
  .max(2048)
  .refine((v) => {
    const url = URL.parse(v);
    return !url || (url.username === '' && url.password === '' && url.search === '' && url.hash === '');
  }, 'must carry no credentials (user:password@), query string or fragment');

const secretText = (what: string) => z.string().min(1).max(8192).describe(`${what} (write-only: stored encrypted, never answered)`);

export const BearerAuth = z.strictObject({
  type: z.literal('bearer'),
  token: secretText('The bearer token, sent as `Authorization: Bearer …`'),
});

export const OAuth2Auth = z.strictObject({
  type: z.literal('oauth2'),
  client_id: z.string().min(1).max(1024).describe('The OAuth2 client id'),
  client_secret: secretText('The OAuth2 client secret'),
  oauth2_server_uri: httpUrl.optional().describe(`The token endpoint; default \`{uri}${DEFAULT_TOKEN_PATH}\``),
  scope: z.string().min(1).max(1024).optional().describe(`The scope asked for; default \`${DEFAULT_SCOPE}\``),
});

/** Lakeport's CatalogAuthRequest: a bearer token, or OAuth2 client credentials exchanged for one. */
export const CatalogAuthRequest = z.discriminatedUnion('type', [BearerAuth, OAuth2Auth]).describe('How to authenticate to the catalog: a bearer token, or OAuth2 client credentials');

export const IcebergRestConfig = z.strictObject({
  uri: httpUrl.describe('The catalog\'s base URL (PyIceberg and Spark: `uri`); Lakeport calls `{uri}/v1/config`, `{uri}/v1/{prefix}/namespaces`…'),
  warehouse: z.string().min(1).max(1024).optional().describe('The warehouse to ask for (`GET /v1/config?warehouse=…`)'),
  prefix: z.string().min(1).max(1024).optional().describe("The path prefix after `/v1/`; the catalog's `/v1/config` overrides may set it instead"),
});

const NativeBinding = z.strictObject({
  kind: z.literal('native'),
  config: z.strictObject({}).default({}).describe('The native catalog takes no configuration'),
  auth: z.null().optional(),
  preserve_sql_case: z.boolean().default(false),
});

const IcebergRestBinding = z.strictObject({
  kind: z.literal('iceberg_rest'),
  config: IcebergRestConfig,
  auth: CatalogAuthRequest.nullish(),
  preserve_sql_case: z.boolean().default(false).describe('Keep external names as they are: names that are not already lowercase are skipped (listed under `skipped`) rather than folded'),
});

export const CatalogBindingRequest = z.discriminatedUnion('kind', [NativeBinding, IcebergRestBinding]);
export type CatalogBindingInput = z.infer<typeof CatalogBindingRequest>;

export const CatalogTestRequest = z.discriminatedUnion('kind', [NativeBinding.omit({ preserve_sql_case: true }), IcebergRestBinding.omit({ preserve_sql_case: true })]);
export type CatalogTestInput = z.infer<typeof CatalogTestRequest>;

const AuthView = z
  .object({
    type: z.enum(['bearer', 'oauth2']),
    token: z.literal(REDACTED).optional(),
    client_id: z.string().optional(),
    client_secret: z.literal(REDACTED).optional(),
    oauth2_server_uri: z.string().optional(),
    scope: z.string().optional(),
  })
  .describe(`The credential with its secret fields shown as "${REDACTED}"`);

export const SyncSummary = z.object({
  at: z.string(),
  by: z.string(),
  namespaces: z.number(),
  tables: z.number(),
  added: z.number(),
  removed: z.number(),
  kept: z.number(),
  skipped: z.number(),
});

export const CatalogBindingView = z.object({
  workspace: z.string(),
  kind: z.enum(CATALOG_KINDS),
  config: z.record(z.string(), z.string()),
  auth: AuthView.nullable(),
  preserve_sql_case: z.boolean(),
  updated_by: z.string().nullable(),
  updated_at: z.string().nullable(),
  last_sync: SyncSummary.nullable(),
});

export const FAILURE_REASONS = ['timeout', 'unreachable', 'auth_refused', 'http_error', 'invalid_response', 'too_large'] as const;

export const CatalogTestResult = z.object({
  ok: z.boolean(),
  kind: z.enum(CATALOG_KINDS),
  reason: z.enum(FAILURE_REASONS).optional().describe('Why the catalog failed (ok: false)'),
  detail: z.string().optional(),
  status: z.number().optional().describe("The catalog's HTTP status, when it answered one"),
  prefix: z.string().nullable().optional().describe('The effective prefix (ok: true)'),
  namespaces: z.number().optional().describe('How many top-level namespaces it lists (ok: true)'),
  elapsed_ms: z.number(),
});

export const SKIP_REASONS = ['invalid_name', 'case_not_preserved', 'name_too_long', 'name_collision', 'dataset_exists'] as const;

export const CatalogSyncResult = z.object({
  workspace: z.string(),
  kind: z.literal('iceberg_rest'),
  prefix: z.string().nullable(),
  namespaces: z.number(),
  tables: z.number(),
  added: z.array(z.string()).describe('`collection.dataset` of the stubs added'),
  removed: z.array(z.string()).describe('`collection.dataset` of the stubs removed'),
  kept: z.number(),
  skipped: z.array(
    z.object({
      namespace: z.array(z.string()),
      table: z.string(),
      reason: z.enum(SKIP_REASONS),
      detail: z.string(),
    }),
  ),
  synced_at: z.string(),
});

const Field = z.object({
  name: z.string(),
  required: z.boolean(),
  secret: z.boolean(),
  description: z.string(),
});

export const CatalogKindsResponse = z.object({
  kinds: z.array(
    z.object({
      kind: z.enum(CATALOG_KINDS),
      title: z.string(),
      description: z.string(),
      config: z.array(Field),
      auth: z.array(z.object({ type: z.string(), fields: z.array(Field) })),
      operations: z.array(z.enum(['test', 'sync'])),
    }),
  ),
});
