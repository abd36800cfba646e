/**
 * The eight OpenAPI documents: valid (a real OpenAPI 3.1 validator), complete (every success answer,
 * request body and error answer has a schema), and the client types generated from them up to date.
 */
import fs from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { OpenAPI3, OperationObject, ReferenceObject, RequestBodyObject, ResponseObject } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_PREFIXES } from '../src/app.ts';
import { clientTypes, serviceDocuments, typesFile, type ServicePrefix } from '../scripts/openapi-types.ts';
import { createTestApp, type TestApp } from './harness.ts';

/** POST, PUT and PATCH operations that take no body at all. */
const BODILESS = new Set([
  'POST /auth/admin/keys/rotate',
  'POST /auth/logout',
  'POST /billing/v1/accounts/{account_id}/members/{identity}/accept',
  'POST /control/v1/accounts/{account_id}/members/{identity}/accept',
  'POST /billing/v1/workspaces/{name}/restore',
  'POST /control/v1/accounts/{account_id}/domains/{domain}/verify',
  'POST /control/v1/notifications/read-all',
  'POST /control/v1/notifications/{notification_id}/read',
  'POST /control/v1/notifications/{notification_id}/dismiss',
  'POST /jobs/api/v1/jobs/{identifier}/cancel',
  'POST /control/v1/workspaces/{name}/catalog/sync',
  'POST /control/v1/workspaces/{name}/catalog/test',
]);

let t: TestApp;
let documents: Record<ServicePrefix, OpenAPI3>;

beforeAll(async () => {
  t = await createTestApp({}, { workers: false });
  documents = await serviceDocuments(t.app);
});
afterAll(async () => t?.close());

function operations(document: OpenAPI3) {
  return Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    Object.entries(item as Record<string, OperationObject>).map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, method, operation })),
  );
}

/** The schema of every media type of a response or request body (none for a body without media types). */
function mediaSchemas(body: ResponseObject | RequestBodyObject | ReferenceObject | undefined) {
  const content = body && 'content' in body ? (body.content ?? {}) : {};
  return Object.values(content).map((media) => ('schema' in media ? media.schema : undefined));
}

const refTo = (name: string) => ({ $ref: `#/components/schemas/${name}` });

describe.each(SERVICE_PREFIXES)('%s/openapi.json', (prefix) => {
  it('is a valid OpenAPI document', async () => {
    const result = await new Validator().validate(documents[prefix] as unknown as Record<string, unknown>);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
  });

  it('describes the success answer of every operation with a schema', () => {
    for (const { name, operation } of operations(documents[prefix])) {
      // A redirect (the interactive sign-in's 302s) is a success answer without a body.
      const success = Object.entries(operation.responses ?? {}).filter(([status]) => status.startsWith('2') || status === '302');
      expect(success.length, name).toBeGreaterThan(0);
      for (const [status, response] of success) {
        if (status === '204' || status === '302') continue;
        const schemas = mediaSchemas(response);
        expect(schemas.length, `${name} ${status}`).toBeGreaterThan(0);
        for (const schema of schemas) expect(schema, `${name} ${status}`).toBeTruthy();
      }
    }
  });

  it('describes every request body with a schema', () => {
    for (const { name, method, operation } of operations(documents[prefix])) {
      if (!operation.requestBody) {
        if (['post', 'put', 'patch'].includes(method)) expect(BODILESS.has(name), `${name} has no requestBody`).toBe(true);
        continue;
      }
      const schemas = mediaSchemas(operation.requestBody);
      expect(schemas.length, name).toBeGreaterThan(0);
      for (const schema of schemas) expect(schema, name).toBeTruthy();
    }
  });

  it('gives every operation the shared error schemas', () => {
    const { schemas } = documents[prefix].components ?? {};
    // The Iceberg REST catalog answers errors in the Iceberg spec's shape (docs/iceberg.md), and no 422.
    if (prefix === '/iceberg') {
      expect(schemas?.IcebergErrorResponse).toMatchObject({ type: 'object', required: ['error'] });
      for (const { name, operation } of operations(documents[prefix])) {
        const responses = operation.responses ?? {};
        expect(mediaSchemas(responses['4XX']), name).toEqual([refTo('IcebergErrorResponse')]);
        expect(mediaSchemas(responses['5XX']), name).toEqual([refTo('IcebergErrorResponse')]);
        expect(responses['422'], name).toBeUndefined();
      }
      return;
    }
    expect(schemas?.ErrorBody).toMatchObject({ type: 'object', required: ['detail', 'code'] });
    for (const { name, operation } of operations(documents[prefix])) {
      const responses = operation.responses ?? {};
      expect(mediaSchemas(responses['4XX']), name).toEqual([refTo('ErrorBody')]);
      expect(mediaSchemas(responses['5XX']), name).toEqual([refTo('ErrorBody')]);
      // A 422 is FastAPI's validation error; every operation that takes a body can answer one.
      if (operation.requestBody || responses['422']) expect(mediaSchemas(responses['422']), name).toEqual([refTo('HTTPValidationError')]);
    }
  });

  it('matches the committed client types (npm run openapi:types)', async () => {
    expect(await clientTypes(prefix, documents[prefix]), `${typesFile(prefix)} is out of date: run npm run openapi:types`).toBe(fs.readFileSync(typesFile(prefix), 'utf8'));
  });
});
