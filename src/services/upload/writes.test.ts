/**
 * Writes and commits: POST /data and POST /commit through the real app, real DuckDB and the real
 * metadata database; staleness, idempotency, concurrency, refused values and the committed data.
 */
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { multipartBody } from '../../../test/multipart.ts';

let t: TestApp;
let alice: TestUser; // owner of sales
let will: TestUser; // writer on sales
let walt: TestUser; // writer on sales, downgraded to reader in a test
let duck: DuckDBInstance;
let db: DuckDBConnection;

beforeAll(async () => {
  t = await createTestApp();
  [alice, will, walt] = await Promise.all(['alice', 'will', 'walt'].map((id) => signIn(t.app, t.adminToken, id)));
  await createWorkspace(alice, 'sales', { will: 'writer', walt: 'writer' });
  duck = await DuckDBInstance.create(':memory:');
  db = await duck.connect();
  await db.run("SET TimeZone='UTC'");
});
afterAll(async () => {
  db?.closeSync();
  duck?.closeSync();
  await t?.close();
});

// ── helpers ───────────────────────────────────────────────────────────────────

type Sample = { name: string; content: string | Buffer };
type Column = { name: string; type: string; nullable?: boolean; logical_type?: string };

async function negotiate(user: TestUser, contract: unknown, samples: Sample[]) {
  const body = await multipartBody({ contract, samples });
  return t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${user.token}` }, payload: body.payload });
}

/** Negotiates (accepting an inferred proposal) and insists on success. */
async function contractOf(user: TestUser, contract: unknown, samples: Sample[]) {
  const res = await negotiate(user, contract, samples);
  expect(res.statusCode, res.body).toBe(201);
  const c = res.json();
  if (c.state === 'proposed') {
    const accepted = await user.request('PUT', `/upload/v2/contracts/${c.contract_id}/accept`, { schema_fingerprint: c.schema_fingerprint });
    expect(accepted.statusCode, accepted.body).toBe(200);
  }
  return c;
}

async function write(user: TestUser, id: string, name: string | undefined, content: string | Buffer, type = 'text/csv') {
  return t.app.inject({
    method: 'POST',
    url: `/upload/v2/contracts/${id}/data`,
    headers: { authorization: `Bearer ${user.token}`, 'content-type': type, ...(name === undefined ? {} : { 'x-file-name': name }) },
    payload: content,
  });
}

async function commit(user: TestUser, id: string, key?: string, body?: unknown) {
  return t.app.inject({
    method: 'POST',
    url: `/upload/v2/contracts/${id}/commit`,
    headers: { authorization: `Bearer ${user.token}`, ...(key ? { 'idempotency-key': key } : {}) },
    ...(body === undefined ? {} : { payload: body as object }),
  });
}

const get = (user: TestUser, id: string) => user.request('GET', `/upload/v2/contracts/${id}`);
const ref = (dataset: string) => ({ workspace: 'sales', collection: 'c', dataset });

async function createDataset(name: string, columns: Column[]) {
  return t.app.lakeport.catalog.createDataset(ref(name), { columns: columns.map((c) => ({ nullable: true, ...c })) }, 'alice');
}

async function snapshots(name: string) {
  const found = await t.app.lakeport.catalog.findDataset(ref(name));
  return found ? t.app.lakeport.catalog.listSnapshots(ref(name)) : [];
}

async function staged(contractId: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const blob of t.deps.blobs.list(`lake/_staging/${contractId}/`)) keys.push(blob.key);
  return keys;
}

/** Rows of Parquet blobs, read by DuckDB from the store's local paths. */
async function readBlobs(keys: string[], select = '*', order = 'id') {
  const paths = await Promise.all(keys.map((k) => t.deps.blobs.localPath(k)));
  const list = paths.map((p) => `'${p.replace(/'/g, "''")}'`).join(', ');
  return (await db.runAndReadAll(`SELECT ${select} FROM read_parquet([${list}]) ORDER BY ${order}`)).getRowObjectsJson();
}

async function describeBlobs(keys: string[]) {
  const paths = await Promise.all(keys.map((k) => t.deps.blobs.localPath(k)));
  const list = paths.map((p) => `'${p.replace(/'/g, "''")}'`).join(', ');
  const rows = (await db.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet([${list}])`)).getRowObjectsJson() as { column_name: string; column_type: string }[];
  return Object.fromEntries(rows.map((r) => [r.column_name, r.column_type]));
}

const csv = (header: string, rows: (string | number)[][]) => `${[header, ...rows.map((r) => r.join(','))].join('\n')}\n`;
const PEOPLE_COLUMNS: Column[] = [
  { name: 'id', type: 'BIGINT', nullable: false },
  { name: 'name', type: 'VARCHAR' },
];
const people = (from: number, count: number) => csv('id,name', Array.from({ length: count }, (_, i) => [from + i, `p${from + i}`]));
const declaredPeople = (dataset: string) => ({ destination: `sales.c.${dataset}`, schema: { mode: 'declared', columns: PEOPLE_COLUMNS } });

// ── write then commit ─────────────────────────────────────────────────────────

describe('write, then commit', () => {
  it('writes a file, publishes it at commit as one snapshot, and refuses anything after', async () => {
    const c = await contractOf(alice, declaredPeople('first'), [{ name: 'people.csv', content: people(1, 2) }]);
    const body = people(1, 3);
    const w = await write(alice, c.contract_id, 'people.csv', body);
    expect(w.statusCode, w.body).toBe(200);
    expect(w.json()).toMatchObject({
      contract_id: c.contract_id,
      written: [{ file: 'people.csv', format: 'csv', rows: 3, source_bytes: Buffer.byteLength(body), bytes: expect.any(Number) }],
      totals: { files: 1, rows: 3 },
    });
    expect(w.json().written[0].bytes).toBeGreaterThan(0);
    expect((await get(alice, c.contract_id)).json().state).toBe('accepted');
    // Readers see nothing before commit.
    expect(await t.app.lakeport.catalog.findDataset(ref('first'))).toBeUndefined();

    const res = await commit(alice, c.contract_id, undefined, { message: 'first load' });
    expect(res.statusCode, res.body).toBe(200);
    const done = res.json();
    expect(done).toMatchObject({
      contract_id: c.contract_id,
      state: 'committed',
      dataset: 'sales.c.first',
      snapshot: { snapshot_id: expect.any(Number), parent_snapshot_id: null, operation: 'create', total_records: 3 },
      rows_written: 3,
    });
    const dataset = await t.app.lakeport.catalog.getDataset(ref('first'));
    expect(dataset.columns.map((col) => [col.name, col.type, col.nullable])).toEqual([
      ['id', 'BIGINT', false],
      ['name', 'VARCHAR', true],
    ]);
    const snaps = await snapshots('first');
    expect(snaps).toHaveLength(1);
    expect(snaps[0]).toMatchObject({ snapshot_id: done.snapshot.snapshot_id, author: 'alice', message: 'first load' });
    expect(Number(snaps[0].total_records)).toBe(3);

    const after = (await get(alice, c.contract_id)).json();
    expect(after).toMatchObject({ state: 'committed', snapshot: { snapshot_id: done.snapshot.snapshot_id }, rows_written: 3 });

    // Committed: no more writes, re-plans or accepts; a commit again answers the commit that was.
    for (const again of [await commit(alice, c.contract_id), await commit(alice, c.contract_id, 'a-fresh-key')]) {
      expect(again.statusCode, again.body).toBe(200);
      expect(again.json()).toEqual(done);
    }
    for (const res2 of [
      await write(alice, c.contract_id, 'people.csv', body),
      await alice.request('PATCH', `/upload/v2/contracts/${c.contract_id}`, { columns: { name: { ignore: true } } }),
      await alice.request('PUT', `/upload/v2/contracts/${c.contract_id}/accept`, { schema_fingerprint: c.schema_fingerprint }),
    ]) {
      expect(res2.statusCode, res2.body).toBe(409);
      expect(res2.json().code).toBe('CONTRACT_COMMITTED');
    }
    expect(await snapshots('first')).toHaveLength(1);

    // Abandoning a committed contract never takes the dataset's files with it.
    const files = await t.app.lakeport.catalog.snapshotFiles(done.snapshot.snapshot_id);
    expect((await alice.request('DELETE', `/upload/v2/contracts/${c.contract_id}`)).statusCode).toBe(204);
    for (const f of files) expect(await t.deps.blobs.head(f.path)).toBeDefined();
    expect(await readBlobs(files.map((f) => f.path))).toEqual([
      { id: '1', name: 'p1' },
      { id: '2', name: 'p2' },
      { id: '3', name: 'p3' },
    ]);
  });

  it('commit with no writes is 409 NOTHING_TO_COMMIT and the contract stays open', async () => {
    const c = await contractOf(alice, declaredPeople('nothing'), [{ name: 'people.csv', content: people(1, 2) }]);
    const res = await commit(alice, c.contract_id);
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json().code).toBe('NOTHING_TO_COMMIT');
    expect((await get(alice, c.contract_id)).json().state).toBe('accepted');
    expect(await t.app.lakeport.catalog.findDataset(ref('nothing'))).toBeUndefined();
    // The refused commit did not burn an idempotency key either.
    expect((await commit(alice, c.contract_id, 'nothing-key')).json().code).toBe('NOTHING_TO_COMMIT');
    expect((await write(alice, c.contract_id, 'people.csv', people(1, 2))).statusCode).toBe(200);
    const ok = await commit(alice, c.contract_id, 'nothing-key');
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().rows_written).toBe(2);
  });

  it('writes and commit to a proposed contract are 409 CONTRACT_NOT_ACCEPTED', async () => {
    const res = await negotiate(alice, { destination: 'sales.c.proposed', schema: { mode: 'infer' } }, [{ name: 'people.csv', content: people(1, 2) }]);
    const c = res.json();
    expect(c.state).toBe('proposed');
    const w = await write(alice, c.contract_id, 'people.csv', people(1, 2));
    expect(w.statusCode, w.body).toBe(409);
    expect(w.json().code).toBe('CONTRACT_NOT_ACCEPTED');
    const cm = await commit(alice, c.contract_id);
    expect(cm.statusCode, cm.body).toBe(409);
    expect(cm.json().code).toBe('CONTRACT_NOT_ACCEPTED');
    expect(await staged(c.contract_id)).toEqual([]);
  });
});

describe('blocking issues', () => {
  it('refuse every write and the commit (409 CONTRACT_BLOCKED), not only the commit', async () => {
    await createDataset('blocked', [
      { name: 'id', type: 'BIGINT', nullable: false },
      { name: 'name', type: 'VARCHAR' },
    ]);
    const c = await contractOf(alice, { destination: 'sales.c.blocked', schema: { mode: 'dataset' } }, [{ name: 'names.csv', content: 'name\na\nb\n' }]);
    expect(c.issues).toEqual(expect.arrayContaining([expect.objectContaining({ severity: 'blocking', code: 'REQUIRED_COLUMN_MISSING', column: 'id' })]));
    const w = await write(alice, c.contract_id, 'names.csv', 'name\na\nb\n');
    expect(w.statusCode, w.body).toBe(409);
    expect(w.json()).toMatchObject({ code: 'CONTRACT_BLOCKED', issues: [expect.objectContaining({ code: 'REQUIRED_COLUMN_MISSING' })] });
    expect(await staged(c.contract_id)).toEqual([]);
    const cm = await commit(alice, c.contract_id);
    expect(cm.statusCode, cm.body).toBe(409);
    expect(cm.json().code).toBe('CONTRACT_BLOCKED');
    expect(await snapshots('blocked')).toHaveLength(0);
  });

  it('warnings do not block', async () => {
    await createDataset('warned', [
      { name: 'id', type: 'BIGINT' },
      { name: 'name', type: 'VARCHAR' },
    ]);
    const c = await contractOf(alice, { destination: 'sales.c.warned', schema: { mode: 'dataset' } }, [{ name: 'p.csv', content: 'id,name,extra\n1,a,x\n' }]);
    expect(c.issues).toEqual([expect.objectContaining({ severity: 'warning', code: 'UNDECLARED_COLUMN', column: 'extra' })]);
    expect((await write(alice, c.contract_id, 'p.csv', 'id,name,extra\n1,a,x\n2,b,y\n')).statusCode).toBe(200);
    const cm = await commit(alice, c.contract_id);
    expect(cm.statusCode, cm.body).toBe(200);
    const files = await t.app.lakeport.catalog.snapshotFiles(cm.json().snapshot.snapshot_id);
    expect(Object.keys(await describeBlobs(files.map((f) => f.path)))).toEqual(['id', 'name']);
  });
});

// ── staleness ─────────────────────────────────────────────────────────────────

describe('staleness', () => {
  it('a definition changed after agreement makes the next write 409 CONTRACT_STALE, and GET says stale', async () => {
    await createDataset('moving', PEOPLE_COLUMNS);
    const c = await contractOf(alice, { destination: 'sales.c.moving', schema: { mode: 'dataset' } }, [{ name: 'p.csv', content: people(1, 2) }]);
    expect(c.state).toBe('accepted');
    expect((await write(alice, c.contract_id, 'p.csv', people(1, 2))).statusCode).toBe(200);

    await t.app.lakeport.catalog.alterDataset(ref('moving'), { columns: [...PEOPLE_COLUMNS.map((col) => ({ nullable: true, ...col })), { name: 'email', type: 'VARCHAR', nullable: true }] }, 'alice');

    const w = await write(alice, c.contract_id, 'p.csv', people(1, 2));
    expect(w.statusCode, w.body).toBe(409);
    expect(w.json().code).toBe('CONTRACT_STALE');
    expect((await get(alice, c.contract_id)).json().state).toBe('stale');
    const cm = await commit(alice, c.contract_id);
    expect(cm.statusCode, cm.body).toBe(409);
    expect(cm.json().code).toBe('CONTRACT_STALE');
    expect(await snapshots('moving')).toHaveLength(0);

    // Re-negotiating against the new definition works.
    const again = await contractOf(alice, { destination: 'sales.c.moving', schema: { mode: 'dataset' } }, [{ name: 'p.csv', content: people(1, 2) }]);
    expect(again.plan.find((p: { column: string }) => p.column === 'email')).toBeDefined();
    expect((await write(alice, again.contract_id, 'p.csv', people(1, 2))).statusCode).toBe(200);
    expect((await commit(alice, again.contract_id)).statusCode).toBe(200);
  });

  it('a definition changed between the last write and the commit: commit is 409 CONTRACT_STALE', async () => {
    await createDataset('moving2', PEOPLE_COLUMNS);
    const c = await contractOf(alice, { destination: 'sales.c.moving2', schema: { mode: 'dataset' } }, [{ name: 'p.csv', content: people(1, 2) }]);
    expect((await write(alice, c.contract_id, 'p.csv', people(1, 2))).statusCode).toBe(200);
    await t.app.lakeport.catalog.alterDataset(ref('moving2'), { columns: [{ name: 'id', type: 'BIGINT', nullable: false }, { name: 'name', type: 'VARCHAR', nullable: false }] }, 'alice');
    const cm = await commit(alice, c.contract_id, 'stale-key');
    expect(cm.statusCode, cm.body).toBe(409);
    expect(cm.json().code).toBe('CONTRACT_STALE');
    expect((await get(alice, c.contract_id)).json().state).toBe('stale');
    expect(await snapshots('moving2')).toHaveLength(0);
  });

  it('a dataset dropped and re-created under the same name makes the contract stale', async () => {
    await createDataset('recreated', PEOPLE_COLUMNS);
    const c = await contractOf(alice, { destination: 'sales.c.recreated', schema: { mode: 'dataset' } }, [{ name: 'p.csv', content: people(1, 2) }]);
    await t.app.lakeport.catalog.dropDataset(ref('recreated'));
    await createDataset('recreated', PEOPLE_COLUMNS);
    const w = await write(alice, c.contract_id, 'p.csv', people(1, 2));
    expect(w.statusCode, w.body).toBe(409);
    expect(w.json().code).toBe('CONTRACT_STALE');
  });
});

// ── idempotency ───────────────────────────────────────────────────────────────

describe('Idempotency-Key', () => {
  it('the same key returns the original response and writes a single snapshot', async () => {
    const c = await contractOf(alice, declaredPeople('idem'), [{ name: 'people.csv', content: people(1, 2) }]);
    expect((await write(alice, c.contract_id, 'people.csv', people(1, 4))).statusCode).toBe(200);
    const first = await commit(alice, c.contract_id, 'idem-1');
    expect(first.statusCode, first.body).toBe(200);
    const second = await commit(alice, c.contract_id, 'idem-1');
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json()).toEqual(first.json());
    expect(await snapshots('idem')).toHaveLength(1);

    // The same key on another contract is refused, and that contract is untouched.
    const other = await contractOf(alice, declaredPeople('idem'), [{ name: 'people.csv', content: people(1, 2) }]);
    expect((await write(alice, other.contract_id, 'people.csv', people(10, 2))).statusCode).toBe(200);
    const reused = await commit(alice, other.contract_id, 'idem-1');
    expect(reused.statusCode, reused.body).toBe(409);
    expect(reused.json().code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect((await get(alice, other.contract_id)).json()).toMatchObject({ state: 'accepted', written: [expect.objectContaining({ rows: 2 })] });
    expect(await snapshots('idem')).toHaveLength(1);
    const own = await commit(alice, other.contract_id, 'idem-2');
    expect(own.statusCode, own.body).toBe(200);
    expect(own.json().snapshot).toMatchObject({ operation: 'append', parent_snapshot_id: first.json().snapshot.snapshot_id, total_records: 6 });
    expect(await snapshots('idem')).toHaveLength(2);
  });

  it('keys belong to their identity: another user may use the same key', async () => {
    const c = await contractOf(will, declaredPeople('idem_will'), [{ name: 'people.csv', content: people(1, 2) }]);
    expect((await write(will, c.contract_id, 'people.csv', people(1, 2))).statusCode).toBe(200);
    const res = await commit(will, c.contract_id, 'idem-1');
    expect(res.statusCode, res.body).toBe(200);
  });

  it('a retry racing the first commit with the same key never commits twice', async () => {
    const c = await contractOf(alice, declaredPeople('idem_race'), [{ name: 'people.csv', content: people(1, 2) }]);
    expect((await write(alice, c.contract_id, 'people.csv', people(1, 5))).statusCode).toBe(200);
    const [a, b] = await Promise.all([commit(alice, c.contract_id, 'race-key'), commit(alice, c.contract_id, 'race-key')]);
    const statuses = [a.statusCode, b.statusCode].sort();
    expect(statuses[0]).toBe(200);
    for (const res of [a, b]) {
      if (res.statusCode === 200) expect(res.json()).toMatchObject({ state: 'committed', rows_written: 5 });
      else expect(res.json().code).toBe('COMMIT_IN_PROGRESS');
    }
    expect(await snapshots('idem_race')).toHaveLength(1);
    const later = await commit(alice, c.contract_id, 'race-key');
    expect(later.statusCode).toBe(200);
    expect(later.json().snapshot.snapshot_id).toBe((await snapshots('idem_race'))[0].snapshot_id);
  });

  it('without a key a second commit answers the first one again; writes are 409 CONTRACT_COMMITTED', async () => {
    const c = await contractOf(alice, declaredPeople('nokey'), [{ name: 'people.csv', content: people(1, 2) }]);
    expect((await write(alice, c.contract_id, 'people.csv', people(1, 2))).statusCode).toBe(200);
    const first = await commit(alice, c.contract_id);
    expect(first.statusCode).toBe(200);
    const again = await commit(alice, c.contract_id);
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toEqual(first.json());
    const w = await write(alice, c.contract_id, 'people.csv', people(1, 2));
    expect(w.statusCode, w.body).toBe(409);
    expect(w.json().code).toBe('CONTRACT_COMMITTED');
    expect(await snapshots('nokey')).toHaveLength(1);
  });

  it('422 for an empty or over-long key', async () => {
    const c = await contractOf(alice, declaredPeople('badkey'), [{ name: 'people.csv', content: people(1, 2) }]);
    expect((await write(alice, c.contract_id, 'people.csv', people(1, 2))).statusCode).toBe(200);
    const long = await commit(alice, c.contract_id, 'k'.repeat(256));
    expect(long.statusCode, long.body).toBe(422);
    expect(long.json().detail[0].loc).toEqual(['header', 'idempotency-key']);
    expect(await snapshots('badkey')).toHaveLength(0);
  });
});

// ── file names ────────────────────────────────────────────────────────────────

describe('files', () => {
  it('rewriting the same file name replaces the earlier write: counted once, one staged file', async () => {
    const c = await contractOf(alice, declaredPeople('rewrite'), [{ name: 'people.csv', content: people(1, 2) }]);
    expect((await write(alice, c.contract_id, 'people.csv', people(1, 5))).json().totals).toMatchObject({ files: 1, rows: 5 });
    const first = await staged(c.contract_id);
    const again = await write(alice, c.contract_id, 'people.csv', people(100, 2));
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json().totals).toMatchObject({ files: 1, rows: 2 });
    const read = (await get(alice, c.contract_id)).json();
    expect(read.written).toEqual([expect.objectContaining({ file: 'people.csv', rows: 2 })]);
    expect(read.totals).toMatchObject({ files: 1, rows: 2 });
    const now = await staged(c.contract_id);
    expect(now).toHaveLength(1);
    expect(now).not.toEqual(first);
    const cm = await commit(alice, c.contract_id);
    expect(cm.json()).toMatchObject({ rows_written: 2, snapshot: { total_records: 2 } });
    const files = await t.app.lakeport.catalog.snapshotFiles(cm.json().snapshot.snapshot_id);
    expect(await readBlobs(files.map((f) => f.path), 'id')).toEqual([{ id: '100' }, { id: '101' }]);
  });

  it('a file not sampled at negotiation is 409 FILE_NOT_NEGOTIATED', async () => {
    const c = await contractOf(alice, declaredPeople('names'), [
      { name: 'a.csv', content: people(1, 2) },
      { name: 'b.csv', content: people(3, 2) },
    ]);
    const other = await write(alice, c.contract_id, 'c.csv', people(1, 2));
    expect(other.statusCode, other.body).toBe(409);
    expect(other.json().code).toBe('FILE_NOT_NEGOTIATED');
    const unnamed = await write(alice, c.contract_id, undefined, people(1, 2));
    expect(unnamed.statusCode, unnamed.body).toBe(409);
    expect(unnamed.json().code).toBe('FILE_NOT_NEGOTIATED');
    expect(unnamed.json().detail).toContain('x-file-name');
    expect(await staged(c.contract_id)).toEqual([]);
  });

  it('with a single negotiated file, x-file-name may be left out', async () => {
    const c = await contractOf(alice, declaredPeople('single'), [{ name: 'only.csv', content: people(1, 2) }]);
    const res = await write(alice, c.contract_id, undefined, people(1, 3));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().written[0]).toMatchObject({ file: 'only.csv', rows: 3 });
  });

  it('a file with more columns than its sample is 409 FILE_DIFFERS_FROM_SAMPLE', async () => {
    const c = await contractOf(alice, declaredPeople('shape'), [{ name: 'p.csv', content: people(1, 2) }]);
    const extra = await write(alice, c.contract_id, 'p.csv', 'id,name,email\n1,a,a@x\n');
    expect(extra.statusCode, extra.body).toBe(409);
    expect(extra.json().code).toBe('FILE_DIFFERS_FROM_SAMPLE');
    expect(await staged(c.contract_id)).toEqual([]);
  });

  it('a file with fewer columns than its sample is 409 FILE_DIFFERS_FROM_SAMPLE', async () => {
    const c = await contractOf(alice, declaredPeople('shape_fewer'), [{ name: 'p.csv', content: people(1, 2) }]);
    const fewer = await write(alice, c.contract_id, 'p.csv', 'id\n1\n2\n');
    expect(fewer.statusCode, fewer.body).toBe(409);
    expect(fewer.json().code).toBe('FILE_DIFFERS_FROM_SAMPLE');
    expect(await staged(c.contract_id)).toEqual([]);
  });

  it('a JSONL file that is not valid JSON is a 409 naming the file, not a server error', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.badjsonl', schema: { mode: 'infer' } }, [{ name: 'x.jsonl', content: '{"id":1,"name":"a"}\n' }]);
    const res = await write(alice, c.contract_id, 'x.jsonl', '{"id":1,"name":"a"}\n{"id":2,\n', 'application/x-ndjson');
    expect(res.statusCode, res.body).toBe(409);
    expect(['FILE_DIFFERS_FROM_SAMPLE', 'VALUE_NOT_STORABLE']).toContain(res.json().code);
    expect(res.json().file).toBe('x.jsonl');
    expect(await staged(c.contract_id)).toEqual([]);
  });

  it('a file whose header has the sampled columns in another order is refused or read by name', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.swapped', schema: { mode: 'infer' } }, [{ name: 'n.csv', content: 'first,last\nAda,Lovelace\n' }]);
    const res = await write(alice, c.contract_id, 'n.csv', 'last,first\nLovelace,Ada\n');
    if (res.statusCode === 200) {
      expect(await readBlobs(await staged(c.contract_id), 'first, last', 'first')).toEqual([{ first: 'Ada', last: 'Lovelace' }]);
    } else {
      expect(res.statusCode, res.body).toBe(409);
      expect(res.json().code).toBe('FILE_DIFFERS_FROM_SAMPLE');
    }
  });
});

// ── refused values ────────────────────────────────────────────────────────────

describe('a value that cannot be stored', () => {
  it('at row 100 000 of a CSV: 409 naming column, line and value; nothing of that file staged; earlier writes kept', async () => {
    const columns = [
      { name: 'id', type: 'BIGINT', nullable: false },
      { name: 'amount', type: 'DOUBLE' },
    ];
    const lines = ['id,amount'];
    for (let i = 1; i <= 120_000; i++) lines.push(`${i},${i}.5`);
    lines[100_000] = '100000,12.x5'; // data row 100 000, which is line 100 001 of the file (line 1 is the header)
    const big = `${lines.join('\n')}\n`;
    const good = 'id,amount\n1,1.5\n2,2.5\n3,3.5\n';
    const c = await contractOf(alice, { destination: 'sales.c.bad_row', schema: { mode: 'declared', columns } }, [
      { name: 'good.csv', content: good },
      { name: 'big.csv', content: lines.slice(0, 1000).join('\n') + '\n' },
    ]);
    expect((await write(alice, c.contract_id, 'good.csv', good)).statusCode).toBe(200);
    const before = await staged(c.contract_id);
    expect(before).toHaveLength(1);

    const res = await write(alice, c.contract_id, 'big.csv', big);
    expect(res.statusCode, res.body).toBe(409);
    const body = res.json();
    expect(body).toMatchObject({ code: 'VALUE_NOT_STORABLE', file: 'big.csv', column: 'amount', row: 100_001, value: '12.x5', type: 'DOUBLE' });
    expect(big.split('\n')[body.row - 1]).toBe('100000,12.x5'); // the line a user opens in an editor
    expect(body.detail).toContain('12.x5');
    expect(body.detail).toContain('amount');
    expect(body.detail).toContain('100001');

    const read = (await get(alice, c.contract_id)).json();
    expect(read.state).toBe('accepted');
    expect(read.written).toEqual([expect.objectContaining({ file: 'good.csv', rows: 3 })]);
    expect(await staged(c.contract_id)).toEqual(before);
    const cm = await commit(alice, c.contract_id);
    expect(cm.statusCode, cm.body).toBe(200);
    expect(cm.json().rows_written).toBe(3);
  });

  it('a NULL in a NOT NULL column names the line', async () => {
    const c = await contractOf(alice, declaredPeople('notnull'), [{ name: 'p.csv', content: people(1, 2) }]);
    const res = await write(alice, c.contract_id, 'p.csv', 'id,name\n1,a\n,b\n3,c\n');
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json()).toMatchObject({ code: 'VALUE_NOT_STORABLE', column: 'id', row: 3, value: null });
  });

  it('a value that is not an IPv4 address in an IPv4 column names the line', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.badip', schema: { mode: 'declared', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'ip', type: 'IPV4' }] } }, [
      { name: 'ip.csv', content: 'id,ip\n1,10.0.0.1\n' },
    ]);
    const res = await write(alice, c.contract_id, 'ip.csv', 'id,ip\n1,10.0.0.1\n2,10.0.0.2\n3,300.1.1.1\n');
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json()).toMatchObject({ code: 'VALUE_NOT_STORABLE', column: 'ip', row: 4, value: '300.1.1.1' });
  });

  it('a bad value in a JSONL file names its line', async () => {
    const c = await contractOf(alice, { destination: 'sales.c.badjson', schema: { mode: 'declared', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'n', type: 'INTEGER' }] } }, [
      { name: 'x.jsonl', content: '{"id":1,"n":1}\n' },
    ]);
    const res = await write(alice, c.contract_id, 'x.jsonl', '{"id":1,"n":1}\n{"id":2,"n":2}\n{"id":3,"n":"three"}\n', 'application/x-ndjson');
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json()).toMatchObject({ code: 'VALUE_NOT_STORABLE', column: 'n', row: 3, value: 'three' });
  });
});

// ── authorization at every write ──────────────────────────────────────────────

describe('authorization', () => {
  it('is checked at every write and at commit, not only at negotiation', async () => {
    const c = await contractOf(walt, declaredPeople('walt'), [{ name: 'p.csv', content: people(1, 2) }]);
    expect((await write(walt, c.contract_id, 'p.csv', people(1, 2))).statusCode).toBe(200);
    const policies = (await alice.request('GET', '/policy/v1/access/workspace/sales')).json().policies as { policy_id: string; principal: { identity: string }; pattern: string }[];
    const walts = policies.find((p) => p.principal.identity === 'walt')!;
    const downgraded = await alice.request('PUT', `/policy/v1/access/workspace/sales/policies/${walts.policy_id}`, { role: 'reader', pattern: walts.pattern });
    expect(downgraded.statusCode, downgraded.body).toBe(200);
    const w = await write(walt, c.contract_id, 'p.csv', people(1, 2));
    expect(w.statusCode, w.body).toBe(403);
    const cm = await commit(walt, c.contract_id);
    expect(cm.statusCode, cm.body).toBe(403);
    expect(await t.app.lakeport.catalog.findDataset(ref('walt'))).toBeUndefined();
  });
});

// ── concurrency and creation ──────────────────────────────────────────────────

describe('concurrent commits', () => {
  it('two contracts on one existing dataset committing at once both land as separate snapshots', async () => {
    await createDataset('shared', PEOPLE_COLUMNS);
    const a = await contractOf(alice, { destination: 'sales.c.shared', schema: { mode: 'dataset' } }, [{ name: 'a.csv', content: people(1, 2) }]);
    const b = await contractOf(will, { destination: 'sales.c.shared', schema: { mode: 'dataset' } }, [{ name: 'b.csv', content: people(1, 2) }]);
    expect((await write(alice, a.contract_id, 'a.csv', people(1, 3))).statusCode).toBe(200);
    expect((await write(will, b.contract_id, 'b.csv', people(100, 5))).statusCode).toBe(200);
    expect(await snapshots('shared')).toHaveLength(0);

    const [ra, rb] = await Promise.all([commit(alice, a.contract_id, 'shared-a'), commit(will, b.contract_id, 'shared-b')]);
    expect(ra.statusCode, ra.body).toBe(200);
    expect(rb.statusCode, rb.body).toBe(200);
    expect(ra.json().snapshot.snapshot_id).not.toBe(rb.json().snapshot.snapshot_id);

    const snaps = await snapshots('shared');
    expect(snaps).toHaveLength(2);
    expect(snaps.every((s) => s.operation === 'append')).toBe(true);
    expect(snaps[1].parent_snapshot_id).toBe(snaps[0].snapshot_id);
    expect(Number(snaps[1].total_records)).toBe(8);
    expect(snaps.map((s) => Number(s.rows_added)).sort()).toEqual([3, 5]);
    const files = await t.app.lakeport.catalog.snapshotFiles(snaps[1].snapshot_id);
    expect(files).toHaveLength(2);
    const rows = await readBlobs(files.map((f) => f.path), 'id');
    expect(rows.map((r) => Number(r.id))).toEqual([1, 2, 3, 100, 101, 102, 103, 104]);
  });

  it('the first contract for a new dataset creates it; a second one negotiated before is stale at its commit', async () => {
    const first = await contractOf(alice, declaredPeople('created'), [{ name: 'p.csv', content: people(1, 2) }]);
    const second = await contractOf(will, declaredPeople('created'), [{ name: 'p.csv', content: people(1, 2) }]);
    expect(first.dataset_exists).toBe(false);
    expect(second.dataset_exists).toBe(false);
    expect((await write(alice, first.contract_id, 'p.csv', people(1, 2))).statusCode).toBe(200);
    expect((await write(will, second.contract_id, 'p.csv', people(50, 3))).statusCode).toBe(200);

    const a = await commit(alice, first.contract_id);
    expect(a.statusCode, a.body).toBe(200);
    expect(a.json().snapshot.operation).toBe('create');
    const b = await commit(will, second.contract_id);
    expect(b.statusCode, b.body).toBe(409);
    expect(b.json().code).toBe('CONTRACT_STALE');
    expect((await get(will, second.contract_id)).json().state).toBe('stale');

    const snaps = await snapshots('created');
    expect(snaps).toHaveLength(1);
    expect(Number(snaps[0].total_records)).toBe(2);
    const files = await t.app.lakeport.catalog.snapshotFiles(snaps[0].snapshot_id);
    expect((await readBlobs(files.map((f) => f.path), 'id')).map((r) => Number(r.id))).toEqual([1, 2]);
  });

  it('two contracts creating one new dataset at the same moment: one creates it, the other is stale', async () => {
    const a = await contractOf(alice, declaredPeople('raced'), [{ name: 'p.csv', content: people(1, 2) }]);
    const b = await contractOf(will, declaredPeople('raced'), [{ name: 'p.csv', content: people(1, 2) }]);
    expect((await write(alice, a.contract_id, 'p.csv', people(1, 2))).statusCode).toBe(200);
    expect((await write(will, b.contract_id, 'p.csv', people(50, 3))).statusCode).toBe(200);
    const results = await Promise.all([commit(alice, a.contract_id, 'raced-a'), commit(will, b.contract_id, 'raced-b')]);
    const ok = results.filter((r) => r.statusCode === 200);
    const refused = results.filter((r) => r.statusCode !== 200);
    expect(ok, results.map((r) => r.body).join('\n')).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0].statusCode, refused[0].body).toBe(409);
    expect(refused[0].json().code).toBe('CONTRACT_STALE');
    const snaps = await snapshots('raced');
    expect(snaps).toHaveLength(1);
    expect(Number(snaps[0].total_records)).toBe(ok[0].json().rows_written);
  });
});

// ── the committed data ────────────────────────────────────────────────────────

describe('committed data', () => {
  it('is readable Parquet with the contract types: DECIMAL, TIMESTAMPTZ, DATE, BOOLEAN, IPv4 as VARCHAR', async () => {
    const columns = [
      { name: 'id', type: 'BIGINT', nullable: false },
      { name: 'amount', type: 'DECIMAL(18,2)' },
      { name: 'at', type: 'TIMESTAMPTZ' },
      { name: 'ip', type: 'IPV4' },
      { name: 'day', type: 'DATE' },
      { name: 'ok', type: 'BOOLEAN' },
      { name: 'note', type: 'VARCHAR' },
    ];
    const file = [
      'id,amount,at,ip,day,ok,note',
      '1,10.50,2024-03-01 10:00:00+02,10.0.0.1,2024-03-01,true,hello',
      '2,0.01,2024-03-02 11:30:00+00,192.168.1.20,2024-03-02,false,',
      '3,1234567890123456.78,2024-03-03 23:00:00-05,255.255.255.255,2024-03-03,,"a, b"',
    ].join('\n');
    const c = await contractOf(alice, { destination: 'sales.c.typed', schema: { mode: 'declared', columns } }, [{ name: 'typed.csv', content: file }]);
    expect(c.plan.find((p: { column: string }) => p.column === 'ip')).toMatchObject({ target_type: 'IPV4' });
    expect(c.plan.find((p: { column: string }) => p.column === 'at')).toMatchObject({ target_type: 'TIMESTAMP WITH TIME ZONE' });
    expect((await write(alice, c.contract_id, 'typed.csv', file)).statusCode).toBe(200);
    const cm = await commit(alice, c.contract_id);
    expect(cm.statusCode, cm.body).toBe(200);

    const dataset = await t.app.lakeport.catalog.getDataset(ref('typed'));
    expect(dataset.columns.map((col) => [col.name, col.type, col.logical_type ?? null])).toEqual([
      ['id', 'BIGINT', null],
      ['amount', 'DECIMAL(18,2)', null],
      ['at', 'TIMESTAMP WITH TIME ZONE', null],
      ['ip', 'VARCHAR', 'ipv4'],
      ['day', 'DATE', null],
      ['ok', 'BOOLEAN', null],
      ['note', 'VARCHAR', null],
    ]);
    // The source type of each column is recorded (OData's SourceType).
    expect(dataset.columns.every((col) => typeof col.source_type === 'string' && col.source_type.length > 0)).toBe(true);

    const files = await t.app.lakeport.catalog.snapshotFiles(cm.json().snapshot.snapshot_id);
    expect(files).toHaveLength(1);
    expect(Number(files[0].row_count)).toBe(3);
    const keys = files.map((f) => f.path);
    expect(await describeBlobs(keys)).toEqual({
      id: 'BIGINT',
      amount: 'DECIMAL(18,2)',
      at: 'TIMESTAMP WITH TIME ZONE',
      ip: 'VARCHAR',
      day: 'DATE',
      ok: 'BOOLEAN',
      note: 'VARCHAR',
    });
    const rows = await readBlobs(keys, `id, amount::VARCHAR AS amount, strftime("at", '%Y-%m-%dT%H:%M:%SZ') AS "at", ip, day::VARCHAR AS day, ok, note`);
    expect(rows).toEqual([
      { id: '1', amount: '10.50', at: '2024-03-01T08:00:00Z', ip: '10.0.0.1', day: '2024-03-01', ok: true, note: 'hello' },
      { id: '2', amount: '0.01', at: '2024-03-02T11:30:00Z', ip: '192.168.1.20', day: '2024-03-02', ok: false, note: null },
      { id: '3', amount: '1234567890123456.78', at: '2024-03-04T04:00:00Z', ip: '255.255.255.255', day: '2024-03-03', ok: null, note: 'a, b' },
    ]);
    // Column statistics are recorded with the file.
    expect(files[0].column_stats).toMatchObject({ amount: { min: '0.01', max: '1234567890123456.78', null_count: 0 }, ok: { null_count: 1 } });
  });
});

// ── commit mode ───────────────────────────────────────────────────────────────

describe('commit mode', () => {
  /** Negotiates with `extra` (e.g. commit_mode), writes `body` as people.csv and commits. */
  async function upload(dataset: string, body: string, extra: Record<string, unknown> = {}, key?: string) {
    const c = await contractOf(alice, { ...declaredPeople(dataset), ...extra }, [{ name: 'people.csv', content: body }]);
    const w = await write(alice, c.contract_id, 'people.csv', body);
    expect(w.statusCode, w.body).toBe(200);
    const res = await commit(alice, c.contract_id, key);
    expect(res.statusCode, res.body).toBe(200);
    return { contract: c, committed: res.json() };
  }
  const rowsOf = async (snapshotId: number) => readBlobs((await t.app.lakeport.catalog.snapshotFiles(snapshotId)).map((f) => f.path));

  it('uploading the same file twice appends a copy by default', async () => {
    const first = await upload('twice', people(1, 2));
    expect(first.contract.commit_mode).toBe('append');
    expect(first.committed).toMatchObject({ commit_mode: 'append', rows_replaced: null });
    const second = await upload('twice', people(1, 2));
    expect(second.committed).toMatchObject({ snapshot: { operation: 'append', total_records: 4 }, rows_written: 2, commit_mode: 'append', rows_replaced: null });
    expect(await rowsOf(second.committed.snapshot.snapshot_id)).toHaveLength(4);
  });

  it('replace: the new snapshot (operation overwrite) holds only this upload; the old one stays in history', async () => {
    const first = await upload('replaced', people(1, 3));
    const c = await contractOf(alice, { ...declaredPeople('replaced'), commit_mode: 'replace' }, [{ name: 'people.csv', content: people(10, 2) }]);
    expect(c.commit_mode).toBe('replace');
    expect((await get(alice, c.contract_id)).json().commit_mode).toBe('replace');
    expect((await write(alice, c.contract_id, 'people.csv', people(10, 2))).statusCode).toBe(200);
    const res = await commit(alice, c.contract_id, 'replace-key');
    expect(res.statusCode, res.body).toBe(200);
    const done = res.json();
    expect(done).toMatchObject({
      snapshot: { operation: 'overwrite', parent_snapshot_id: first.committed.snapshot.snapshot_id, total_records: 2 },
      rows_written: 2,
      commit_mode: 'replace',
      rows_replaced: 3,
    });
    expect(await rowsOf(done.snapshot.snapshot_id)).toEqual([
      { id: '10', name: 'p10' },
      { id: '11', name: 'p11' },
    ]);
    // History keeps the old snapshot, readable by its id.
    const snaps = await snapshots('replaced');
    expect(snaps.map((s) => s.operation)).toEqual(['create', 'overwrite']);
    const old = await t.app.lakeport.catalog.resolveSnapshot(ref('replaced'), { kind: 'id', snapshotId: first.committed.snapshot.snapshot_id });
    expect((await t.app.lakeport.catalog.resolveSnapshot(ref('replaced'), { kind: 'previous' })).snapshot_id).toBe(old.snapshot_id);
    expect(old.snapshot_id).toBe(first.committed.snapshot.snapshot_id);
    expect(await rowsOf(old.snapshot_id)).toHaveLength(3);

    // A retry with the same key answers the original response, and commits nothing more.
    const again = await commit(alice, c.contract_id, 'replace-key');
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toEqual(done);
    const rebuilt = await commit(alice, c.contract_id);
    expect(rebuilt.json()).toEqual(done);
    expect(await snapshots('replaced')).toHaveLength(2);
  });

  it('replace of a dataset that does not exist yet creates it', async () => {
    const { committed } = await upload('replace_new', people(1, 2), { commit_mode: 'replace' });
    expect(committed).toMatchObject({ snapshot: { operation: 'create', total_records: 2 }, commit_mode: 'replace', rows_replaced: 0 });
  });

  it('PATCH changes the commit mode of an open contract; 422 for an unknown mode', async () => {
    await upload('patched', people(1, 2));
    const c = await contractOf(alice, declaredPeople('patched'), [{ name: 'people.csv', content: people(5, 1) }]);
    const refused = await negotiate(alice, { ...declaredPeople('patched'), commit_mode: 'truncate' }, [{ name: 'people.csv', content: people(5, 1) }]);
    expect(refused.statusCode).toBe(422);
    const patched = await alice.request('PATCH', `/upload/v2/contracts/${c.contract_id}`, { columns: {}, commit_mode: 'replace' });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toMatchObject({ commit_mode: 'replace', state: 'accepted' });
    expect((await write(alice, c.contract_id, 'people.csv', people(5, 1))).statusCode).toBe(200);
    const res = await commit(alice, c.contract_id);
    expect(res.json()).toMatchObject({ snapshot: { operation: 'overwrite', total_records: 1 }, commit_mode: 'replace', rows_replaced: 2 });
  });

  it('a replace racing an append: each snapshot is whole (its files add up to its total), whichever lands first', async () => {
    await upload('race_replace', people(1, 4));
    const r = await contractOf(alice, { ...declaredPeople('race_replace'), commit_mode: 'replace' }, [{ name: 'people.csv', content: people(100, 2) }]);
    const a = await contractOf(alice, declaredPeople('race_replace'), [{ name: 'people.csv', content: people(200, 3) }]);
    expect((await write(alice, r.contract_id, 'people.csv', people(100, 2))).statusCode).toBe(200);
    expect((await write(alice, a.contract_id, 'people.csv', people(200, 3))).statusCode).toBe(200);
    const [rc, ac] = await Promise.all([commit(alice, r.contract_id), commit(alice, a.contract_id)]);
    expect(rc.statusCode, rc.body).toBe(200);
    expect(ac.statusCode, ac.body).toBe(200);
    const snaps = await snapshots('race_replace');
    expect(snaps).toHaveLength(3);
    for (const s of snaps) expect(await rowsOf(s.snapshot_id)).toHaveLength(Number(s.total_records));
    const replacedFirst = rc.json().snapshot.snapshot_id < ac.json().snapshot.snapshot_id;
    expect(rc.json().rows_replaced).toBe(replacedFirst ? 4 : 7);
    expect(Number(snaps[2].total_records)).toBe(replacedFirst ? 5 : 2);
  });

  it('a writer may replace (policies: upload needs writer)', async () => {
    await upload('by_writer', people(1, 2));
    const c = await contractOf(will, { ...declaredPeople('by_writer'), commit_mode: 'replace' }, [{ name: 'people.csv', content: people(7, 1) }]);
    expect((await write(will, c.contract_id, 'people.csv', people(7, 1))).statusCode).toBe(200);
    const res = await commit(will, c.contract_id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ snapshot: { operation: 'overwrite', total_records: 1 }, rows_replaced: 2 });
  });
});
