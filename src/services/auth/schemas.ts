import { z } from 'zod';
import { formatPattern, parsePattern, PATTERN_HINT, ROLES, SCOPES } from '../../core/authz/index.ts';
import { Identity, queryBoolean } from '../../core/http/index.ts';


export const ClientParams = z.object({ client_id: Identity });
export const CredentialParams = z.object({ client_id: Identity, credential_id: z.string().min(1).max(64) });

const PermissionPair = z.tuple([z.string(), z.enum(ROLES)]).transform(([pattern, role], ctx) => {
  const parsed = parsePattern(pattern);
  if (!parsed) {
    ctx.addIssue({ code: 'custom', message: `invalid pattern '${pattern}': ${PATTERN_HINT}`, path: [0] });
    return z.NEVER;
  }
  return [formatPattern(parsed), role] as [string, (typeof ROLES)[number]];
});

export const CreateCredentialRequest = z
  .object({
    type: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, "must be 'interactive' or a name of 1-64 letters, digits or . _ -")
      .default('interactive'),
    expires_in_days: z.number().int().min(1).max(3650).nullable().default(90),
    scopes: z.array(z.enum(SCOPES)).default([]),
    permissions: z.array(PermissionPair).default([]),
  })
  .prefault({});

export const CredentialMetadata = z.object({
  credential_id: z.string(),
  client_id: z.string(),
  type: z.string(),
  scopes: z.array(z.string()),
  permissions: z.array(z.tuple([z.string(), z.string()])),
  secret_hint: z.string().describe('Prefix and last four characters of the secret'),
  created_at: z.string(),
  created_by: z.string(),
  expires_at: z.string().nullable(),
  expired: z.boolean(),
  last_used_at: z.string().nullable(),
});

export const CreateCredentialResponse = CredentialMetadata.extend({
  secret: z.string().describe('Shown only in this response'),
});

export const RevokeCredentialResponse = z.object({
  message: z.string(),
  credential_id: z.string(),
  client_id: z.string(),
  revoked_at: z.string(),
});

/** Form fields of POST /token; every one optional, as RFC 6749 allows client auth by header. */
export const TokenForm = z
  .object({
    grant_type: z.string().default('client_credentials'),
    client_id: z.string().optional(),
    client_secret: z.string().optional(),
    refresh_token: z.string().optional(),
    scope: z.string().optional(),
  })
  .prefault({});

export const TokenQuery = z.object({ set_cookie: queryBoolean(false) });

export const TokenResponse = z.object({
  access_token: z.string(),
  token_type: z.literal('Bearer'),
  expires_in: z.number().describe('Seconds until the access token expires'),
  scope: z.string(),
  refresh_token: z.string().optional(),
});

export const TokenActionForm = z
  .object({
    token: z.string().min(1),
    token_type_hint: z.string().optional(),
    client_id: z.string().optional(),
    client_secret: z.string().optional(),
  });

export const MeResponse = z.object({
  identity: z.string(),
  client_id: z.string(),
  billing_account: z.string().nullable(),
  scopes: z.array(z.string()),
  permissions: z.array(z.tuple([z.string(), z.string()])),
  credential_id: z.string(),
  token_id: z.string(),
  expires_at: z.string(),
  expires_in: z.number(),
  /** Interactive sessions only: the provider used, its `amr` and `auth_time` (from the provider's ID token). */
  idp: z.string().optional(),
  amr: z.array(z.string()).optional(),
  auth_time: z.string().optional(),
});

export const RevokeResponse = z.object({ revoked: z.literal(true) });

/** RFC 7662: `active`, and for an active token its claims. */
export const IntrospectionResponse = z.looseObject({ active: z.boolean() });

/** RFC 7517: the public keys, each a JWK (kty, kid, alg, use and the key's own members). */
export const JwksResponse = z.object({ keys: z.array(z.looseObject({ kty: z.string().optional(), kid: z.string().optional() })) });

/** OpenID Connect discovery / RFC 8414 metadata. */
export const DiscoveryDocument = z.looseObject({ issuer: z.string(), token_endpoint: z.string(), jwks_uri: z.string() });

export const KeyRotationResponse = z.object({ kid: z.string().describe('The new signing key'), retired: z.array(z.string()) });
