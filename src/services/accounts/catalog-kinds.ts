import crypto from 'node:crypto';
import type { z } from 'zod';
import { BearerAuth, IcebergRestConfig, OAuth2Auth, type CatalogKindsResponse } from './catalog-binding-schemas.ts';

/** The catalog kinds document (`GET /control/v1/catalog-kinds`), its ETag and its caching (docs/catalog-bindings.md). */

/** Private (the answer needs a token) for five minutes, as the spec says. */
export const CATALOG_KINDS_CACHE_CONTROL = 'private, max-age=300';

const SECRET_FIELDS = new Set(['token', 'client_secret']);

/** The fields of a strict object schema, as the kinds document lists them (the request schemas are the source). */
function fieldsOf(schema: z.ZodObject, omit: string[] = []) {
  return Object.entries(schema.shape)
    .filter(([name]) => !omit.includes(name))
    .map(([name, field]) => ({
      name,
      required: !(field as z.ZodType).safeParse(undefined).success,
      secret: SECRET_FIELDS.has(name),
      description: (field as z.ZodType).description ?? '',
    }));
}

export const CATALOG_KINDS_DOCUMENT: z.infer<typeof CatalogKindsResponse> = {
  kinds: [
    {
      kind: 'native',
      title: "Lakeport's own catalog",
      description: 'Datasets uploaded to and versioned by Lakeport. Every workspace starts here; binding an external catalog adds stubs beside them, and deleting the binding comes back here.',
      config: [],
      auth: [],
      operations: [],
    },
    {
      kind: 'iceberg_rest',
      title: 'Apache Iceberg REST catalog',
      description:
        'Any catalog speaking the Iceberg REST protocol: Apache Polaris, Snowflake Open Catalog, the Iceberg REST endpoints of Unity Catalog and AWS Glue, and another Lakeport (`/iceberg`). A sync lists its namespaces and tables into stub datasets.',
      config: fieldsOf(IcebergRestConfig),
      auth: [
        { type: 'bearer', fields: fieldsOf(BearerAuth, ['type']) },
        { type: 'oauth2', fields: fieldsOf(OAuth2Auth, ['type']) },
      ],
      operations: ['test', 'sync'],
    },
  ],
};

/** A strong ETag: a SHA-256 of the body as answered (JSON.stringify of the document, sent as text). */
export const CATALOG_KINDS_ETAG = `"${crypto.createHash('sha256').update(JSON.stringify(CATALOG_KINDS_DOCUMENT)).digest('base64url').slice(0, 32)}"`;

/** Whether an If-None-Match header names this ETag (a list, weak forms and `*` included, RFC 9110 §13.1.2). */
export function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const tags = ifNoneMatch.split(',').map((t) => t.trim().replace(/^W\//, ''));
  return tags.includes('*') || tags.includes(etag);
}
