/**
 * The cluster suite (docs/testing.md): two `serve` and two `lakeport worker` processes on one
 * PostgreSQL database and one S3-compatible bucket, the flows a request may take across them, and
 * the faults a cluster meets — each counted in a fault table printed at the end. Several processes
 * share only PostgreSQL, so it runs when DATABASE_URL is set (as `.ci/run` does).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LakeportApiError, type LakeportClient } from '../../src/client/index.ts';
import { describeRun, lakeport } from '../e2e/cli.ts';
import { sleep, startCluster, until, type Cluster, type LakeportProcess } from './cluster.ts';
import { FaultTable } from './fault-table.ts';
import { batchesInDataset, clientOf, DATASET, failureOf, lostBatches, makeBatch, openContract, tokenFrom, uploadBatch, type Batch, type Failure } from './lake.ts';

const ADMIN_URL = process.env.DATABASE_URL;
/** How long an S3 request may go without a byte before it is abandoned and retried (LAKEPORT_S3_TIMEOUT_SECONDS), short here for the stall cases. */
const S3_TIMEOUT_SECONDS = 2;

/** Writes zeros to `file` until the disk holding it has `leave` bytes free (about), or none. */
async function fill(file: string, leave: number): Promise<void> {
  const { bavail, bsize } = await fs.statfs(path.dirname(file));
  let left = bavail * bsize - leave;
  const handle = await fs.open(file, 'w');
  try {
    for (const chunk = Buffer.alloc(1 << 20); left > 0; left -= chunk.length) await handle.write(chunk, 0, Math.min(chunk.length, left));
    if (leave === 0) for (const page = Buffer.alloc(4096); ; ) await handle.write(page);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    await handle.close();
  }
}

/** The bound docs/auth.md gives for a revocation to reach the other servers, read from the doc itself. */
async function documentedRevocationSeconds(): Promise<number> {
  const doc = await fs.readFile(path.join(import.meta.dirname, '../../docs/auth.md'), 'utf8');
  const match = /on other servers\s+within `LAKEPORT_AUTH_CACHE_SECONDS`\s+\((?:default )?(\d+) s/.exec(doc);
  if (!match) throw new Error('docs/auth.md no longer says "on other servers within `LAKEPORT_AUTH_CACHE_SECONDS` (default N s": update the cluster suite with the documented bound');
  return Number(match[1]);
}

describe.runIf(ADMIN_URL)('a cluster: 2 serve + 2 worker processes, one PostgreSQL, one S3 bucket', () => {
  let cluster: Cluster;
  /** The serve processes (replaced when restarted) and the workers. */
  const serve: Record<'A' | 'B', LakeportProcess> = {} as never;
  const workers: LakeportProcess[] = [];
  const table = new FaultTable();
  const timings: [string, number][] = [];
  let work: string;
  let diskB: Awaited<ReturnType<Cluster['smallDisk']>>;
  let secret: string;
  let credentialId: string;
  /** alice's clients of A and B. */
  const on = {} as Record<'A' | 'B', LakeportClient>;
  let nextBatch = 1;
  const batch = (rows = 2_000) => makeBatch(work, nextBatch++, rows);
  const started = Date.now();
  // The servers run no jobs: only the workers do.
  const serveEnv = { LAKEPORT_JOB_WORKERS: '0', LAKEPORT_S3_TIMEOUT_SECONDS: String(S3_TIMEOUT_SECONDS) };
  const workerEnv = { LAKEPORT_JOB_WORKERS: '2', LAKEPORT_JOB_THREADS: '1', LAKEPORT_S3_TIMEOUT_SECONDS: String(S3_TIMEOUT_SECONDS) };

  const admin = (server: LakeportProcess, method: string, pathname: string, json?: unknown) =>
    fetch(`${server.url}${pathname}`, {
      method,
      headers: { 'x-admin-token': cluster.adminToken, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
      body: json === undefined ? undefined : JSON.stringify(json),
    });

  async function clientsFor(server: 'A' | 'B') {
    on[server] = clientOf(serve[server].url, await tokenFrom(serve[server].url, 'alice', secret));
  }

  /** Times a test body into the summary printed at the end. */
  const timed = (name: string, fn: () => Promise<void>) => async () => {
    const t0 = Date.now();
    try {
      await fn();
    } finally {
      timings.push([name, (Date.now() - t0) / 1000]);
    }
  };

  beforeAll(async () => {
    const t0 = Date.now();
    cluster = await startCluster(ADMIN_URL!);
    work = await cluster.tempDir('work');
    // The first process migrates the new database; the others then start together.
    serve.A = await cluster.start('serve', 'A', { env: serveEnv });
    // B's data directory is a small disk of its own, to be filled (the disk-full case).
    diskB = await cluster.smallDisk('B', '256m');
    [serve.B, workers[0], workers[1]] = await Promise.all([
      cluster.start('serve', 'B', { env: serveEnv, dataDir: diskB.dir }),
      cluster.start('worker', 'W1', { env: workerEnv }),
      cluster.start('worker', 'W2', { env: workerEnv }),
    ]);
    const made = await admin(serve.A, 'POST', '/auth/clients/alice/credentials', {});
    expect(made.status).toBe(200);
    ({ secret, credential_id: credentialId } = (await made.json()) as { secret: string; credential_id: string });
    await Promise.all([clientsFor('A'), clientsFor('B')]);
    const account = await fetch(`${serve.A.url}/billing/v1/accounts`, { method: 'POST', headers: { authorization: `Bearer ${await tokenFrom(serve.A.url, 'alice', secret)}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Acme' }) }).then((r) => r.json());
    const workspace = await fetch(`${serve.B.url}/control/v1/workspaces/sales`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${await tokenFrom(serve.B.url, 'alice', secret)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ billing_account: account.account_id, members: [{ identity: 'alice', role: 'owner' }] }),
    });
    expect(workspace.status, await workspace.clone().text()).toBe(200);
    timings.push(['start 2 serve + 2 worker processes and set up', (Date.now() - t0) / 1000]);
  }, 240_000);

  // A failed test shows the last errors the processes logged (level 50 and up, and anything not JSON, such as a crash).
  beforeEach(({ onTestFailed }) => {
    onTestFailed(() => {
      for (const p of [serve.A, serve.B, ...workers]) {
        if (!p) continue;
        const errors = p.output().split('\n').filter((line) => !line.startsWith('{') || /"level":(5|6)\d/.test(line));
        console.log(`--- ${p.kind} ${p.name} (${p.alive() ? 'running' : 'exited'}) ---\n${errors.slice(-20).map((line) => line.slice(0, 2_000)).join('\n')}`);
      }
    });
  });

  afterAll(async () => {
    timings.push(['whole suite', (Date.now() - started) / 1000]);
    console.log(`${table.render()}\n\ncluster suite timings (s)\n${timings.map(([name, s]) => `  ${s.toFixed(1).padStart(6)}  ${name}`).join('\n')}`);
    await cluster?.stop();
  }, 120_000);

  describe('flows across processes', () => {
    it('a credential made on one server works on the other', timed('credential across servers', async () => {
      const made = await admin(serve.B, 'POST', '/auth/clients/bob/credentials', {});
      const { secret: bobSecret } = (await made.json()) as { secret: string };
      const token = await tokenFrom(serve.A.url, 'bob', bobSecret);
      for (const server of [serve.A, serve.B]) {
        const me = await fetch(`${server.url}/auth/me`, { headers: { authorization: `Bearer ${token}` } });
        expect(me.status).toBe(200);
        expect(await me.json()).toMatchObject({ identity: 'bob' });
      }
    }), 60_000);

    it('an upload negotiated on one server commits on the other', timed('upload across servers', async () => {
      const first = await batch();
      const { snapshotId } = await uploadBatch(first, on.A, on.B);
      expect(snapshotId).toBeGreaterThan(0);
      // And with the CLI: uploaded through B, read back through A.
      const second = await batch();
      const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, LAKEPORT_URL: serve.B.url, LAKEPORT_CLIENT_ID: 'alice', LAKEPORT_CLIENT_SECRET: secret };
      const run = await lakeport(['upload', second.file, '--to', DATASET, '--accept'], env);
      expect(run.code, describeRun(run)).toBe(0);
      const found = await batchesInDataset(on.A);
      expect(lostBatches(found, [first, second], []).lost).toEqual([]);
    }), 60_000);

    it('jobs submitted on both servers run on the workers only', timed('jobs on the workers', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) {
        for (const client of [on.A, on.B]) ids.push((await client.submitJob({ sql_text: `SELECT count(*) AS n FROM range(150000000) t(i) WHERE i % 7 = ${i}` })).execution_id);
      }
      for (const id of ids) expect((await on.A.waitForJob(id)).status).toBe('succeeded');
      // Each job ran on one of the two workers and none on a serve. Which worker takes which job is
      // a race of their polls (one worker may take them all); the worker-kill fault shows the other
      // taking over.
      const { rows } = await cluster.db.query<{ worker_id: string }>('SELECT worker_id FROM jobs WHERE execution_id = ANY($1)', [ids]);
      expect(rows).toHaveLength(ids.length);
      for (const { worker_id } of rows) expect(workers.map((w) => w.workerId)).toContain(worker_id);
    }), 120_000);

    it('OData pages alternate servers', timed('OData paging across servers', async () => {
      const found = await batchesInDataset(on.B);
      const total = [...found.values()].reduce((n, b) => n + b.rows, 0);
      const token = await tokenFrom(serve.A.url, 'alice', secret);
      let url: string | undefined = `${serve.A.url}/odata/api/v4/sales/raw/events?$top=700&$select=batch,i`;
      const seen = new Set<string>();
      const servedBy: string[] = [];
      for (let page = 0; url; page++) {
        const server = page % 2 === 0 ? serve.A : serve.B;
        // A load balancer sends each request to some server: the link names the public URL.
        const target = new URL(url);
        const response = await fetch(`${server.url}${target.pathname}${target.search}`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
        expect(response.status, await response.clone().text()).toBe(200);
        const body = (await response.json()) as { value: { batch: number; i: number }[]; '@odata.nextLink'?: string };
        for (const row of body.value) seen.add(`${row.batch}/${row.i}`);
        servedBy.push(server.name);
        url = body['@odata.nextLink'];
        if (url) expect(url.startsWith(cluster.publicUrl)).toBe(true);
      }
      expect(seen.size).toBe(total);
      expect(new Set(servedBy)).toEqual(new Set(['A', 'B']));
    }), 60_000);

    it('a revocation on one server is honoured by the other within the documented time', timed('revocation across servers', async () => {
      const bound = await documentedRevocationSeconds();
      const made = await admin(serve.A, 'POST', '/auth/clients/carol/credentials', {});
      const { secret: carolSecret, credential_id } = (await made.json()) as { secret: string; credential_id: string };
      const token = await tokenFrom(serve.A.url, 'carol', carolSecret);
      const me = (server: LakeportProcess) => fetch(`${server.url}/auth/me`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);
      // B has verified (and cached) the token before the revocation.
      expect(await me(serve.B)).toBe(200);
      const revoked = await admin(serve.A, 'DELETE', `/auth/clients/carol/credentials/${credential_id}`);
      expect(revoked.status).toBe(200);
      const t0 = Date.now();
      expect(await me(serve.A)).toBe(401);
      await until('B to refuse the revoked token', async () => (await me(serve.B)) === 401, (bound + 5) * 1000, 100);
      const seconds = (Date.now() - t0) / 1000;
      // Polling, and requests slowed by the rest of the suite running beside this one, take a moment too.
      expect(seconds).toBeLessThanOrEqual(bound + 2);
      timings.push([`  revocation reached B after (documented: ${bound} s)`, seconds]);
    }), 60_000);
  });

  describe('faults', () => {
    it('kill -9 of a serve during uploads: its uploads in flight fail, every acknowledged one is whole, the other serves on', timed('kill -9 serve A during uploads', async () => {
      const t0 = Date.now();
      const acknowledged: Batch[] = [];
      const unanswered: Batch[] = [];
      const failures: (Failure & { server: 'A' | 'B' })[] = [];
      let requests = 0;
      let killed = false;
      let stopB = false;
      // Three upload loops on A until it dies, two on B until a while after.
      const loop = async (server: 'A' | 'B') => {
        const client = on[server];
        while (server === 'A' ? !killed || requests === 0 : !stopB) {
          const b = await batch(5_000);
          requests++;
          try {
            await uploadBatch(b, client);
            acknowledged.push(b);
          } catch (error) {
            failures.push({ ...failureOf(error), server });
            unanswered.push(b);
            if (server === 'A') return;
          }
        }
      };
      const loops = [loop('A'), loop('A'), loop('A'), loop('B'), loop('B')];
      await until('three uploads acknowledged', () => acknowledged.length >= 3, 60_000);
      await serve.A.kill9();
      killed = true;
      const killedAt = acknowledged.length;
      await until('B to go on acknowledging uploads after the kill', () => acknowledged.length >= killedAt + 4, 60_000);
      stopB = true;
      await Promise.all(loops);

      // Only A's requests failed, each for want of an answer (at most one in flight per loop).
      const onB = failures.filter((f) => f.server === 'B');
      expect(onB).toEqual([]);
      expect(failures.length).toBeLessThanOrEqual(3);
      for (const f of failures) expect(f).toMatchObject({ server: 'A', status: 0, code: 'NETWORK' });
      const { lost, landedUnanswered } = lostBatches(await batchesInDataset(on.B), acknowledged, unanswered);
      expect(lost).toEqual([]);

      // A comes back on its data directory and serves again.
      serve.A = await cluster.start('serve', 'A', { dataDir: serve.A.dataDir, env: serveEnv });
      await clientsFor('A');
      const after = await batch();
      await uploadBatch(after, on.A);
      expect(lostBatches(await batchesInDataset(on.A), [after], []).lost).toEqual([]);
      table.add({
        fault: 'kill -9 serve A during uploads',
        requests,
        failed: failures.length,
        lost: lost.length,
        seconds: (Date.now() - t0) / 1000,
        notes: `uploads in flight on A got no answer (${failures.map((f) => f.message).join('; ')}); ${landedUnanswered} of them committed anyway; B: ${acknowledged.length - killedAt} uploads after the kill, 0 failed; A restarted and committed again`,
      });
    }), 180_000);

    it('kill -9 of a worker during jobs: every job ends, re-queued ones succeed elsewhere', timed('kill -9 of a worker during jobs', async () => {
      const t0 = Date.now();
      const ids: string[] = [];
      const expected = new Map<string, number>();
      for (let i = 0; i < 4; i++) {
        for (const client of [on.A, on.B]) {
          const n = 60_000_000 + i * 1000;
          const { execution_id } = await client.submitJob({ sql_text: `SELECT count(*) AS n FROM range(${n}) t(i) WHERE i % 5 = 2` });
          ids.push(execution_id);
          expected.set(execution_id, Math.floor((n - 1 - 2) / 5) + 1);
        }
      }
      // The victim is the first worker seen running one of them (a worker that finishes a job claims the
      // next at once, so one worker may take them all while the other waits for its poll).
      const { victimIndex, running } = await until('a worker to run a job', async () => {
        const { rows } = await cluster.db.query<{ execution_id: string; worker_id: string }>("SELECT execution_id, worker_id FROM jobs WHERE status = 'running' AND execution_id = ANY($1)", [ids]);
        if (rows.length === 0) return undefined;
        const victimIndex = workers.findIndex((w) => w.workerId === rows[0].worker_id);
        return { victimIndex, running: rows.filter((r) => r.worker_id === rows[0].worker_id).map((r) => r.execution_id) };
      }, 60_000, 50);
      const victim = workers[victimIndex];
      const other = workers[1 - victimIndex];
      await victim.kill9();
      // The other worker alone recovers what the dead one held (heartbeats; docs/jobs.md).
      const final = await until('every job to end', async () => {
        const { rows } = await cluster.db.query<{ execution_id: string; status: string; attempts: number; worker_id: string; error: unknown }>('SELECT execution_id, status, attempts, worker_id, error FROM jobs WHERE execution_id = ANY($1)', [ids]);
        return rows.length === ids.length && rows.every((r) => r.status !== 'queued' && r.status !== 'running') ? rows : undefined;
      }, 90_000, 250).catch(() => undefined);
      const { rows: now } = await cluster.db.query<{ execution_id: string; status: string }>('SELECT execution_id, status FROM jobs WHERE execution_id = ANY($1)', [ids]);
      const lost = ids.length - (final?.length ?? 0);
      expect(final, `jobs not ended: ${JSON.stringify(now)}`).toBeDefined();
      const requeued = final!.filter((r) => r.attempts > 1);
      for (const id of running) expect(requeued.map((r) => r.execution_id)).toContain(id);
      for (const r of final!) {
        expect(r.status, JSON.stringify(r.error)).toBe('succeeded');
        expect([victim.workerId, other.workerId]).toContain(r.worker_id);
        expect((await on.B.jobResults(r.execution_id)).data).toEqual([[expected.get(r.execution_id)]]);
      }
      for (const r of requeued) expect(r.worker_id).toBe(other.workerId);
      workers[victimIndex] = await cluster.start('worker', victim.name, { dataDir: victim.dataDir, env: workerEnv });
      table.add({
        fault: 'kill -9 of a worker during jobs',
        requests: ids.length,
        failed: final!.filter((r) => r.status !== 'succeeded').length,
        lost,
        seconds: (Date.now() - t0) / 1000,
        notes: `${running.length} job(s) running on ${victim.name} were re-queued and succeeded on ${other.name} (${requeued.length} re-queued in all); results checked`,
      });
    }), 180_000);

    it('PostgreSQL cut off during load: requests in the window fail clearly, the processes reconnect by themselves', timed('PostgreSQL connections cut for 3 s', async () => {
      const t0 = Date.now();
      const WINDOW_MS = 3_000;
      const readyz = (server: LakeportProcess) => fetch(`${server.url}/readyz`).then((r) => r.status);
      const hasReadyz = (await readyz(serve.A)) !== 404;
      let cutAt = Infinity;
      let stop = false;
      let requests = 0;
      const failures: (Failure & { endedBeforeCut: boolean; server: string })[] = [];
      const acknowledged: string[] = [];
      const lastFailureAt: Record<string, number> = {};
      // The load is another identity's, so that its jobs never queue behind alice's checks (jobs per identity).
      const made = await admin(serve.A, 'POST', '/auth/clients/loadgen/credentials', {});
      const { secret: loadSecret } = (await made.json()) as { secret: string };
      const load = { A: clientOf(serve.A.url, await tokenFrom(serve.A.url, 'loadgen', loadSecret)), B: clientOf(serve.B.url, await tokenFrom(serve.B.url, 'loadgen', loadSecret)) };
      const listCredentials = async (server: 'A' | 'B') => {
        const response = await fetch(`${serve[server].url}/auth/clients/loadgen/credentials`, { headers: { 'x-admin-token': cluster.adminToken } });
        if (!response.ok) throw new LakeportApiError(response.status, await response.json());
      };
      const loop = async (server: 'A' | 'B') => {
        while (!stop) {
          try {
            requests++;
            const { execution_id } = await load[server].submitJob({ sql_text: 'SELECT 42 AS answer' });
            acknowledged.push(execution_id);
            requests++;
            await listCredentials(server);
          } catch (error) {
            failures.push({ ...failureOf(error), endedBeforeCut: Date.now() < cutAt, server });
            lastFailureAt[server] = Date.now();
          }
          await sleep(100);
        }
      };
      const loops = [loop('A'), loop('B')];
      await sleep(1_000);
      cutAt = Date.now();
      cluster.pgProxy.cut();
      const readyDuringCut = hasReadyz ? await Promise.all([readyz(serve.A), readyz(serve.B)]) : [];
      await sleep(WINDOW_MS);
      cluster.pgProxy.restore();
      const restoredAt = Date.now();
      // Back by themselves: both servers answer again, with no restart and no help.
      await until('both servers to answer again', () => ['A', 'B'].every((s) => (lastFailureAt[s] ?? 0) < Date.now() - 2_000) && Date.now() - restoredAt > 2_000, 30_000, 100).catch((error: Error) => {
        throw new Error(`${error.message}; last failures: ${JSON.stringify(failures.slice(-5))}`);
      });
      stop = true;
      await Promise.all(loops);
      const recoverySeconds = Math.max(0, Math.max(lastFailureAt.A ?? restoredAt, lastFailureAt.B ?? restoredAt) - restoredAt) / 1000;

      // Only requests in flight at the cut or sent in the window failed, each with a clear answer.
      expect(failures.filter((f) => f.endedBeforeCut)).toEqual([]);
      for (const f of failures) expect(f, JSON.stringify(f)).toMatchObject({ status: 503, code: 'METADATA_UNAVAILABLE' });
      expect(recoverySeconds).toBeLessThan(5);
      // Every job the servers took ran to its end on the workers, which reconnected too.
      const ended = await until('every acknowledged job to end', async () => {
        const { rows } = await cluster.db.query<{ status: string }>('SELECT status FROM jobs WHERE execution_id = ANY($1)', [acknowledged]);
        return rows.length === acknowledged.length && rows.every((r) => r.status !== 'queued' && r.status !== 'running') ? rows : undefined;
      }, 90_000, 250);
      const lost = acknowledged.length - ended.length;
      expect(ended.filter((r) => r.status !== 'succeeded')).toEqual([]);
      if (hasReadyz) {
        expect(readyDuringCut).toEqual([503, 503]);
        expect(await Promise.all([readyz(serve.A), readyz(serve.B)])).toEqual([200, 200]);
      }
      const codes = [...new Set(failures.map((f) => `${f.status} ${f.code}`))].join(', ');
      table.add({
        fault: 'PostgreSQL cut off for 3 s under load',
        requests,
        failed: failures.length,
        lost,
        seconds: (Date.now() - t0) / 1000,
        notes: `failed only in the window (${codes || 'none'}); answering again ${recoverySeconds.toFixed(1)} s after; ${acknowledged.length} jobs taken, all succeeded; /readyz ${hasReadyz ? '503 during, 200 after' : 'not built yet (checked once it is)'}; relay refused ${cluster.pgProxy.stats.refused} connections`,
      });
    }), 180_000);

    /** Reads batch `b` back through OData on `server` (all its rows, following nextLink there), as a row count and sum of `v`. */
    async function readBack(server: LakeportProcess, token: string, b: Batch): Promise<{ rows: number; sum: number }> {
      let url: string | undefined = `${server.url}/odata/api/v4/sales/raw/events?$filter=batch eq ${b.batch}&$select=v&$top=5000`;
      let rows = 0;
      let sum = 0;
      while (url) {
        const response = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
        const text = await response.text();
        if (response.status !== 200) throw new LakeportApiError(response.status, JSON.parse(text));
        const body = JSON.parse(text) as { value: { v: number }[]; '@odata.nextLink'?: string };
        rows += body.value.length;
        for (const row of body.value) sum += row.v;
        const next = body['@odata.nextLink'];
        url = next ? `${server.url}${new URL(next).pathname}${new URL(next).search}` : undefined;
      }
      return { rows, sum };
    }

    /** What a request answered: `ok`, or the failure's `status code`. */
    const answerOf = (request: Promise<unknown>): Promise<string> =>
      request.then(
        () => 'ok',
        (error: unknown) => {
          const f = failureOf(error);
          return `${f.status} ${f.code}`;
        },
      );

    it.each([
      ['slowdown', '503 SlowDown'],
      ['stall', `stalls (no answer; ${S3_TIMEOUT_SECONDS} s timeout)`],
    ] as const)('the S3 server %s: retried with backoff, then clear 503s, never corrupt data', (kind, what) => timed(`S3 ${what}`, async () => {
      const t0 = Date.now();
      const token = await tokenFrom(serve.B.url, 'alice', secret);
      const proxy = cluster.s3Proxy;
      let requests = 0;
      const hitBefore = proxy.stats[kind];

      // 1. Every request's first attempt hit: the clients see nothing (the SDK retries).
      proxy.inject({ kind, attempts: 'first' });
      const absorbed = await batch(3_000);
      try {
        await uploadBatch(absorbed, on.A);
        requests += 3;
        expect(await readBack(serve.B, token, absorbed)).toEqual({ rows: absorbed.rows, sum: absorbed.sum });
        requests++;
        expect(lostBatches(await batchesInDataset(on.B), [absorbed], []).lost).toEqual([]);
        requests += 3;
      } finally {
        proxy.clear();
      }
      const absorbedHits = proxy.stats[kind] - hitBefore;
      expect(absorbedHits).toBeGreaterThan(0);

      // 2. Every attempt hit, for a window: what needs the bucket fails with a clear 503; nothing else does.
      const pending = await batch(3_000);
      const unread = await batch(3_000);
      await uploadBatch(unread, on.A); // B has never read it: reading it needs the bucket
      const contract = { contract_id: await openContract(on.A, pending) };
      proxy.inject({ kind, attempts: 'all' });
      let answers: string[];
      try {
        answers = await Promise.all([answerOf(on.A.writeFile(contract.contract_id, pending.file)), answerOf(readBack(serve.B, token, unread))]);
        requests += 2;
        // What needs only the database goes on.
        expect((await fetch(`${serve.B.url}/auth/me`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
        requests++;
      } finally {
        proxy.clear();
      }
      const failed = answers.filter((a) => a !== 'ok');
      expect(answers).toEqual(['503 STORAGE_UNAVAILABLE', '503 STORAGE_UNAVAILABLE']);

      // 3. After the window: the same write goes through, and what is read back is what was written.
      await on.A.writeFile(contract.contract_id, pending.file);
      await on.B.commit(contract.contract_id, `batch-${pending.batch}`);
      requests += 2;
      for (const b of [pending, unread]) expect(await readBack(serve.B, token, b)).toEqual({ rows: b.rows, sum: b.sum });
      const { lost } = lostBatches(await batchesInDataset(on.A), [absorbed, pending, unread], []);
      requests += 5;
      expect(lost).toEqual([]);
      table.add({
        fault: `S3 ${what}`,
        requests,
        failed: failed.length,
        lost: lost.length,
        seconds: (Date.now() - t0) / 1000,
        notes: `first attempts hit (${absorbedHits} S3 requests): no client saw it; every attempt hit: a write and an uncached read answered ${[...new Set(failed)].join(', ')}, /auth/me 200; after: both batches read back with the same count and sum`,
      });
    })(), 180_000);

    it('disk full in the data directory: a clear error, no half-written snapshot, and fine once there is room', async (ctx) => {
      const t0 = Date.now();
      ctx.onTestFinished(() => void timings.push(['disk full in B\'s data directory', (Date.now() - t0) / 1000]));
      if (!diskB.mounted) {
        table.add({ fault: 'disk full in a data directory', requests: 0, failed: 0, lost: 0, seconds: 0, notes: `skipped: ${diskB.reason}` });
        ctx.skip();
      }
      const snapshots = async () => (await cluster.db.query<{ n: number }>("SELECT count(*)::int AS n FROM catalog_snapshots s JOIN catalog_datasets d USING (dataset_id) WHERE d.workspace = 'sales' AND d.name = 'events'")).rows[0].n;
      const token = await tokenFrom(serve.B.url, 'alice', secret);
      const filler = path.join(diskB.dir, 'filler');
      const answers: string[] = [];
      let requests = 0;
      // No room at all (the body cannot even be taken in), then room for the body but not for its Parquet (DuckDB runs out).
      for (const leave of [0, 20 * 2 ** 20]) {
        const big = await batch(1_000_000); // 14 MB of CSV
        const contract = await openContract(on.B, big);
        const before = await snapshots();
        await fill(filler, leave);
        try {
          answers.push(await answerOf(on.B.writeFile(contract, big.file)), await answerOf(on.B.commit(contract, `batch-${big.batch}`, { retries: 0 })));
          expect((await fetch(`${serve.B.url}/auth/me`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
          requests += 3;
        } finally {
          await fs.rm(filler, { force: true });
        }
        expect(answers.slice(-2)).toEqual(['507 DISK_FULL', '409 NOTHING_TO_COMMIT']);
        // Nothing was kept, so there is nothing to commit, and no snapshot came of it.
        expect(await snapshots()).toBe(before);
        // With room again, the same upload goes through whole.
        await on.B.writeFile(contract, big.file);
        await on.B.commit(contract, `batch-${big.batch}`);
        requests += 2;
        expect(await snapshots()).toBe(before + 1);
        const { lost } = lostBatches(await batchesInDataset(on.A), [big], []);
        requests++;
        expect(lost).toEqual([]);
      }
      table.add({
        fault: 'disk full in B\'s data directory',
        requests,
        failed: answers.length,
        lost: 0,
        seconds: (Date.now() - t0) / 1000,
        notes: `a 14 MB upload to a full disk, and to one with 20 MB left (DuckDB runs out): ${[...new Set(answers)].join(', ')}; no snapshot made; /auth/me 200; with room again the same contracts wrote and committed whole`,
      });
    }, 180_000);
  });
});
