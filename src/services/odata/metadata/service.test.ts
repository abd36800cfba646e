import { describe, expect, it } from 'vitest';
import { buildMetadataDocument } from './document.ts';
import { llmsTxt, tokenUrlFor } from './llms.ts';
import { isExternalStub, supportsVersions } from './properties.ts';
import { buildServiceDocument, serviceDocumentChunks } from './service-document.ts';
import { dataset, version } from './test-data.ts';
import { readEdmx } from './test-xml.ts';

const ref = (workspace: string, collection: string, dataset: string) => ({ workspace, collection, dataset });

describe('buildServiceDocument', () => {
  const refs = [ref('sales', 'raw', 'orders'), ref('hr', 'people', 'staff'), ref('sales', 'clean', 'orders'), ref('sales', 'raw', 'customers')];

  it('lists an entity set per dataset, grouped by workspace and collection', () => {
    const doc = buildServiceDocument('https://lp.example/odata/api/v4/$metadata', refs);
    expect(doc).toEqual({
      '@odata.context': 'https://lp.example/odata/api/v4/$metadata',
      value: [
        { name: 'hr__people__staff', kind: 'EntitySet', url: 'hr/people/staff', title: 'hr / people / staff' },
        { name: 'sales__clean__orders', kind: 'EntitySet', url: 'sales/clean/orders', title: 'sales / clean / orders' },
        { name: 'sales__raw__customers', kind: 'EntitySet', url: 'sales/raw/customers', title: 'sales / raw / customers' },
        { name: 'sales__raw__orders', kind: 'EntitySet', url: 'sales/raw/orders', title: 'sales / raw / orders' },
      ],
    });
    expect(buildServiceDocument('x', []).value).toEqual([]);
  });

  it('streams the text JSON.stringify gives for the document, in pieces', () => {
    const many = [...refs, ref('a__b', 'c', 'd'), ref('a', 'b__c', 'd'), ...Array.from({ length: 1_200 }, (_, i) => ref(`w${i % 7}`, 'c', `d${1_200 - i}`))];
    for (const list of [[], refs, many]) {
      const pieces = [...serviceDocumentChunks('https://lp.example/"$metadata', list)];
      expect(pieces.join('')).toBe(JSON.stringify(buildServiceDocument('https://lp.example/"$metadata', list)));
      if (list === many) expect(pieces.length).toBeGreaterThan(2);
    }
  });

  it('names sets as the service-wide $metadata does, collisions included', () => {
    const colliding = [ref('a__b', 'c', 'd'), ref('a', 'b__c', 'd'), ref('sales', 'raw', 'orders')];
    const doc = buildServiceDocument('x', colliding);
    const metadata = readEdmx(buildMetadataDocument(colliding.map((r) => version({ dataset: dataset({ workspace: r.workspace, collection: r.collection, name: r.dataset }) }))));
    expect(doc.value.map((e) => e.name).sort()).toEqual(Object.keys(metadata.sets).sort());
    expect(doc.value.find((e) => e.url === 'a/b__c/d')?.name).toMatch(/^a__b__c__d_[0-9a-f]{8}$/);
  });
});

describe('llmsTxt', () => {
  const text = llmsTxt('https://lp.example/odata');

  it('tells an agent how to authenticate', () => {
    expect(text).toContain('curl -s -u "$CLIENT_ID:$CLIENT_SECRET" -d grant_type=client_credentials https://lp.example/auth/token');
    expect(text).toContain('Authorization: Bearer <access_token>');
    expect(text).toMatch(/HTTP Basic/);
    expect(text).toContain('`odata` scope');
  });

  it('tells it how to discover, filter, page and aggregate', () => {
    expect(text).toContain('GET https://lp.example/odata/api/v4/ lists every dataset');
    expect(text).toContain('GET https://lp.example/odata/api/v4/$metadata');
    expect(text).toContain('order_date ge 2024-01-01');
    expect(text).toContain("now() sub duration'P7D'");
    expect(text).toContain("in_subnet(client_ip,'10.0.0.0/8')");
    expect(text).toContain('@odata.nextLink');
    expect(text).toContain('0 to 25000, default 100');
    expect(text).toContain('groupby((col1,col2),aggregate(amount with sum as total,$count as n))');
    expect(text).toMatch(/^# Lakeport OData v4\n\n> /);
  });

  it('escapes $ for the shell in its curl examples', () => {
    expect(text).toContain('--data-urlencode "\\$filter=');
    expect(text).toContain('/orders/\\$metadata');
  });

  it('finds the token endpoint beside the OData prefix', () => {
    expect(tokenUrlFor('http://127.0.0.1:8080/odata')).toBe('http://127.0.0.1:8080/auth/token');
    expect(tokenUrlFor('https://lp.example/base/odata/')).toBe('https://lp.example/base/auth/token');
    expect(llmsTxt('http://h/odata', 'https://idp.example/token')).toContain('https://idp.example/token');
  });
});

describe('supportsVersions', () => {
  it('is true for tables, false for logical views (no snapshots) and external stubs', () => {
    expect(supportsVersions({ kind: 'table' })).toBe(true);
    expect(supportsVersions({ kind: 'view' })).toBe(false);
    expect(isExternalStub({ kind: 'view' })).toBe(false);
    expect(isExternalStub({ kind: 'external' })).toBe(true);
    expect(supportsVersions({ kind: 'external' })).toBe(false);
    expect([dataset(), dataset({ kind: 'external' })].filter(supportsVersions)).toHaveLength(1);
  });
});
