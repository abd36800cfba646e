import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../../../../test/harness.ts';
import { Catalog } from '../../../core/catalog/index.ts';
import { Sealer } from '../../../core/crypto/index.ts';
import { SecretStore } from './secret-store.ts';

let t: TestDb;
let store: SecretStore;
const master = new Sealer(crypto.randomBytes(32));

beforeAll(async () => {
  t = await createTestDb();
  store = new SecretStore(t.db, master);
  const catalog = new Catalog(t.db);
  await catalog.claimNamespace('ws', 'acct_a');
  await catalog.claimNamespace('other', 'acct_b');
});
afterAll(async () => t.dispose());

const put = (mode: 'create' | 'if_not_exists' | 'replace', name: string, values: Record<string, string>, options: { type?: 's3_access_key' | 'http_endpoint'; by?: string; workspace?: string; account?: string } = {}) =>
  store.put(mode, {
    workspace: options.workspace ?? 'ws',
    name,
    type: options.type ?? 's3_access_key',
    billingAccount: options.account ?? 'acct_a',
    values,
    by: options.by ?? 'alice',
  });

describe('SecretStore', () => {
  it('seals values under a per-account data key, itself sealed with the master key', async () => {
    const created = await put('create', 'one', { SECRET_ACCESS_KEY: 'plain-text-value-1' });
    expect(created.outcome).toBe('created');
    expect(created.secret).not.toHaveProperty('ciphertext');
    const row = await t.db.kysely.selectFrom('secrets').selectAll().where('name', '=', 'one').executeTakeFirstOrThrow();
    expect(row.ciphertext).not.toContain('plain-text-value-1');
    expect(row.ciphertext).toMatch(/^v1\./);
    const key = await t.db.kysely.selectFrom('secret_data_keys').selectAll().where('billing_account', '=', 'acct_a').executeTakeFirstOrThrow();
    // The data key opens only with the master key, bound to its account.
    expect(master.open(key.wrapped_key, 'lakeport/secret-data-key/v1/acct_a')).toHaveLength(32);
    expect(() => master.open(key.wrapped_key, 'lakeport/secret-data-key/v1/acct_b')).toThrow();
    expect(() => new Sealer(crypto.randomBytes(32)).open(key.wrapped_key, 'lakeport/secret-data-key/v1/acct_a')).toThrow();
    expect(await store.use('ws', 'one')).toEqual({ type: 's3_access_key', values: { SECRET_ACCESS_KEY: 'plain-text-value-1' } });
  });

  it('gives each billing account its own data key, made once', async () => {
    await Promise.all(Array.from({ length: 5 }, (_, i) => put('create', `b${i}`, { SECRET_ACCESS_KEY: 'v' }, { workspace: 'other', account: 'acct_b' })));
    const keys = await t.db.kysely.selectFrom('secret_data_keys').selectAll().orderBy('billing_account').execute();
    expect(keys.map((k) => k.billing_account)).toEqual(['acct_a', 'acct_b']);
    for (let i = 0; i < 5; i++) expect((await store.use('other', `b${i}`))?.values).toEqual({ SECRET_ACCESS_KEY: 'v' });
  });

  it('binds a ciphertext to its row: moved to another name it does not open', async () => {
    await put('create', 'source', { SECRET_ACCESS_KEY: 'moved' });
    await put('create', 'target', { SECRET_ACCESS_KEY: 'original' });
    const source = await t.db.kysely.selectFrom('secrets').select('ciphertext').where('name', '=', 'source').executeTakeFirstOrThrow();
    await t.db.kysely.updateTable('secrets').set({ ciphertext: source.ciphertext }).where('name', '=', 'target').execute();
    await expect(store.use('ws', 'target')).rejects.toThrow();
  });

  it('create refuses an existing name; if_not_exists leaves it untouched', async () => {
    await put('create', 'dup', { SECRET_ACCESS_KEY: 'first' });
    expect((await put('create', 'dup', { SECRET_ACCESS_KEY: 'second' })).outcome).toBe('exists');
    expect((await put('if_not_exists', 'dup', { SECRET_ACCESS_KEY: 'third' }, { by: 'bob' })).outcome).toBe('unchanged');
    expect((await store.use('ws', 'dup'))?.values).toEqual({ SECRET_ACCESS_KEY: 'first' });
    expect((await store.find('ws', 'dup'))?.created_by).toBe('alice');
  });

  it('replace keeps created_by and created_at, resets last_used_at and use_count', async () => {
    await put('create', 'rep', { SECRET_ACCESS_KEY: 'old' });
    await store.use('ws', 'rep');
    await store.use('ws', 'rep');
    const before = (await store.find('ws', 'rep'))!;
    expect(before).toMatchObject({ use_count: 2, created_by: 'alice', replaced_by: null });
    expect(before.last_used_at).not.toBeNull();
    const replaced = await put('replace', 'rep', { SECRET_ACCESS_KEY: 'new' }, { by: 'bob' });
    expect(replaced.outcome).toBe('replaced');
    expect(replaced.secret).toMatchObject({ created_by: 'alice', created_at: before.created_at, use_count: 0, last_used_at: null, replaced_by: 'bob' });
    expect((await store.use('ws', 'rep'))?.values).toEqual({ SECRET_ACCESS_KEY: 'new' });
  });

  it('replace creates when there is nothing to replace, and never changes the type', async () => {
    expect((await put('replace', 'fresh', { SECRET_ACCESS_KEY: 'a' })).outcome).toBe('created');
    const mismatch = await put('replace', 'fresh', { URL: 'https://x.example/' }, { type: 'http_endpoint' });
    expect(mismatch).toMatchObject({ outcome: 'type_mismatch', secret: { type: 's3_access_key' } });
    expect((await store.use('ws', 'fresh'))?.values).toEqual({ SECRET_ACCESS_KEY: 'a' });
  });

  it('replaces atomically: concurrent replaces leave one whole value', async () => {
    await put('create', 'race', { A: '0', B: '0' });
    await Promise.all(Array.from({ length: 8 }, (_, i) => put('replace', 'race', { A: String(i), B: String(i) })));
    const { values } = (await store.use('ws', 'race'))!;
    expect(values.A).toBe(values.B);
    const rows = await t.db.kysely.selectFrom('secrets').select('name').where('name', '=', 'race').execute();
    expect(rows).toHaveLength(1);
  });

  it('goes with its workspace namespace', async () => {
    const catalog = new Catalog(t.db);
    await catalog.claimNamespace('doomed', 'acct_a');
    await put('create', 'x', { SECRET_ACCESS_KEY: 'v' }, { workspace: 'doomed' });
    await catalog.dropNamespace('doomed', { force: true });
    expect(await store.find('doomed', 'x')).toBeUndefined();
  });
});
