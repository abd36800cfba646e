/**
 * Misconfigurations a cluster invites, each refused at start with a message that names the setting
 * to fix and the doc section (docs/deploy.md, "Start-up refusals"), tried against a running cluster
 * (PostgreSQL, S3) and a running PGlite server. One table: a new case is a row; a case not refused
 * yet carries `todo` (what happens today) and shows as a todo until it is. Runs when DATABASE_URL
 * is set, beside the cluster suite; test/startup-refusals.test.ts checks each refusal in detail.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../processes.ts';
import { startCluster, type Cluster, type LakeportProcess } from './cluster.ts';

const ADMIN_URL = process.env.DATABASE_URL;
/** How long a refused process may take to say so and exit. */
const REFUSAL_TIMEOUT_MS = 60_000;

interface Refusal {
  /** The misconfiguration. */
  name: string;
  /** The process that must refuse to start, and its environment over the cluster's (`''` unsets a variable). */
  refuses(context: { cluster: Cluster; first: LakeportProcess; pglite: LakeportProcess }): Promise<{ kind: 'serve' | 'worker'; env: Record<string, string> }>;
  /** The setting its message must name. */
  setting: RegExp;
  /** The doc section its message must point to; `false` while the refusal names none. */
  doc: RegExp | false;
  /** Not refused yet: what happens today. The case is a todo until this is removed. */
  todo?: string;
}

/** docs/deploy.md, "Start-up refusals": every refusal ends with its section. */
const section = (anchor: string) => new RegExp(`; see docs/deploy\\.md#${anchor}$`, 'm');

const REFUSALS: Refusal[] = [
  {
    name: 'a master key other than the one that sealed the database',
    refuses: async () => ({ kind: 'serve', env: { LAKEPORT_MASTER_KEY: Buffer.alloc(32, 7).toString('base64') } }),
    setting: /LAKEPORT_MASTER_KEY/,
    doc: section('master-key'),
  },
  {
    name: 'a storage URL other than the one the cluster uses',
    refuses: async ({ cluster }) => ({ kind: 'serve', env: { LAKEPORT_STORAGE_URL: `s3://${cluster.s3.bucket}/elsewhere` } }),
    setting: /LAKEPORT_STORAGE_URL/,
    doc: section('storage-url'),
  },
  {
    name: 'a PGlite data directory another process on this host has open',
    refuses: async ({ pglite }) => ({ kind: 'serve', env: { DATABASE_URL: '', LAKEPORT_STORAGE_URL: '', LAKEPORT_DATA_DIR: pglite.dataDir } }),
    setting: /DATABASE_URL/,
    // Refused by the lock as before; its message points at operations.md, not at a section of deploy.md.
    doc: false,
  },
  {
    name: 'a PGlite data directory a server on another host has open (a shared file system)',
    refuses: async ({ cluster }) => {
      const dir = await cluster.tempDir('foreign-lock');
      await fs.writeFile(path.join(dir, 'pgdata.lock'), '4242 other-host.example');
      return { kind: 'serve', env: { DATABASE_URL: '', LAKEPORT_STORAGE_URL: '', LAKEPORT_DATA_DIR: dir } };
    },
    setting: /DATABASE_URL|LAKEPORT_DATA_DIR/,
    doc: section('pglite-one-host'),
  },
  {
    name: 'a worker without DATABASE_URL',
    refuses: async () => ({ kind: 'worker', env: { DATABASE_URL: '' } }),
    setting: /DATABASE_URL/,
    doc: section('worker-database'),
  },
  {
    name: "a clock far from PostgreSQL's (10 minutes ahead)",
    refuses: async () => ({ kind: 'serve', env: { NODE_OPTIONS: `--require ${path.join(REPO_ROOT, 'test/fixtures/clock-offset.cjs')}`, LAKEPORT_TEST_CLOCK_OFFSET_MS: String(10 * 60_000) } }),
    setting: /LAKEPORT_MAX_CLOCK_SKEW_SECONDS|clock/i,
    doc: section('clocks'),
  },
];

describe.runIf(ADMIN_URL)('misconfigurations a cluster invites are refused at start', () => {
  let cluster: Cluster;
  let first: LakeportProcess;
  let pglite: LakeportProcess;

  beforeAll(async () => {
    cluster = await startCluster(ADMIN_URL!);
    // A cluster's server (PostgreSQL, S3) and a lone server on PGlite, for the second process to clash with.
    [first, pglite] = await Promise.all([
      cluster.start('serve', 'first', { env: { LAKEPORT_JOB_WORKERS: '0' } }),
      cluster.start('serve', 'pglite', { env: { DATABASE_URL: '', LAKEPORT_STORAGE_URL: '', LAKEPORT_JOB_WORKERS: '0' } }),
    ]);
  }, 180_000);

  afterAll(async () => cluster?.stop(), 60_000);

  for (const refusal of REFUSALS) {
    if (refusal.todo) {
      it.todo(`${refusal.name} — not refused yet: ${refusal.todo}`);
      continue;
    }
    it(`${refusal.name}: refused at start, naming ${refusal.setting.source}${refusal.doc ? ' and the doc section' : ''}`, async () => {
      const { kind, env } = await refusal.refuses({ cluster, first, pglite });
      const { code, output } = await cluster.run(kind, env, REFUSAL_TIMEOUT_MS);
      expect(code, `still running after ${REFUSAL_TIMEOUT_MS} ms, or exited 0:\n${output}`).not.toBe(0);
      expect(code).not.toBeNull();
      const said = output.split('\n').filter((line) => line.startsWith('lakeport:')).join('\n');
      expect(said, output).toMatch(refusal.setting);
      if (refusal.doc) expect(said).toMatch(refusal.doc);
      // The servers already running are untouched.
      for (const server of [first, pglite]) expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    }, REFUSAL_TIMEOUT_MS + 30_000);
  }
});
