/**
 * docs/deploy.md and deploy/ against the code: every start-up refusal points at a section that
 * exists, the doc's links resolve, and the Compose file, the systemd units and their environment
 * file set only settings Lakeport knows, with values it accepts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig, SETTING_NAMES } from '../src/config.ts';
import { loadMigrations } from '../src/core/db/index.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
const DOC = read('docs/deploy.md');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2… */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, heading] of markdown.matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').trim().replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path.join(dir, e.name)] : []));
}

/** Values that pass validation, for the secrets the deploy files leave to the operator. */
const SAMPLES: Record<string, string> = {
  LAKEPORT_MASTER_KEY: Buffer.alloc(32, 7).toString('base64'),
  LAKEPORT_ADMIN_TOKEN: 'an-admin-token-of-the-operator',
  LAKEPORT_METRICS_TOKEN: 'a-metrics-token-for-prometheus',
};

/** Checks an environment as a process of the cluster would get it: known settings only, and loadConfig accepts it. */
function expectAccepted(env: Record<string, string>, where: string) {
  const unknown = Object.keys(env).filter((k) => !SETTING_NAMES.includes(k) && !['NODE_ENV'].includes(k));
  expect(unknown, `${where}: settings Lakeport does not read`).toEqual([]);
  const filled = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, SAMPLES[k] ?? v.replace(/\$\{(\w+)(?::-([^}]*))?[^}]*\}/g, (_m, name: string, fallback?: string) => fallback ?? SAMPLES[name] ?? 'secret-value-0123456789').replace(/CHANGE-ME/g, 'secret-value-0123456789')]));
  expect(() => loadConfig(filled), where).not.toThrow();
  return loadConfig(filled);
}

describe('docs/deploy.md', () => {
  it('has the section every start-up refusal points at', () => {
    const sections = anchors(DOC);
    const named = sourceFiles(path.join(ROOT, 'src')).flatMap((file) =>
      [...fs.readFileSync(file, 'utf8').matchAll(/new StartRefusal\(([\s\S]*?)\);/g)].map((m) => [...m[1].matchAll(/'([a-z0-9-]+)'/g)].at(-1)?.[1]),
    );
    expect(new Set(named)).toEqual(new Set(['master-key', 'storage-url', 'pglite-one-host', 'worker-database', 'clocks', 'upgrades']));
    for (const anchor of named) expect(sections, `docs/deploy.md#${anchor}`).toContain(anchor);
  });

  it("lists in Upgrades exactly the migrations marked offline", () => {
    const offline = loadMigrations()
      .filter((m) => m.offline)
      .map((m) => `${String(m.version).padStart(4, '0')}_${m.name}`);
    expect(offline).toContain('0007_upload_parts');
    expect([...DOC.matchAll(/^\| `(\d{4}_[a-z0-9_]+)` \|/gm)].map((m) => m[1])).toEqual(offline);
  });

  it('links only to files and sections that exist', () => {
    const sections = anchors(DOC);
    for (const [, target] of DOC.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^https?:/.test(target)) continue;
      const [file, anchor] = target.split('#');
      if (file === '') {
        expect(sections, target).toContain(anchor);
        continue;
      }
      const resolved = path.join(ROOT, 'docs', file);
      expect(fs.existsSync(resolved), target).toBe(true);
      if (anchor) expect(anchors(fs.readFileSync(resolved, 'utf8')), target).toContain(anchor);
    }
  });
});

describe('deploy/', () => {
  it('docker-compose.yml gives every Lakeport process settings Lakeport accepts: one cluster, servers without jobs, a worker with them', () => {
    const compose = parse(read('deploy/docker-compose.yml'), { merge: true }) as { services: Record<string, { command?: string[]; environment?: Record<string, string> }> };
    const lakeport = Object.entries(compose.services).filter(([, s]) => s.command && ['serve', 'worker', 'migrate'].includes(s.command[0]));
    expect(lakeport.map(([name]) => name).sort()).toEqual(['migrate', 'serve-1', 'serve-2', 'worker']);
    const configs = Object.fromEntries(lakeport.map(([name, s]) => [name, expectAccepted(s.environment!, `compose service ${name}`)]));
    for (const name of ['serve-1', 'serve-2', 'worker', 'migrate']) {
      expect(configs[name].databaseUrl, name).toBe(configs.worker.databaseUrl);
      expect(configs[name].storageUrl, name).toBe('s3://lakeport/lake');
    }
    expect(configs['serve-1'].jobWorkers).toBe(0);
    expect(configs.worker.jobWorkers).toBe(4);
    expect(configs.worker.workerPort).toBe(9464);
    for (const file of ['deploy/Dockerfile', 'deploy/Caddyfile', 'deploy/env.example']) expect(fs.existsSync(path.join(ROOT, file)), file).toBe(true);
  });

  it('the systemd units and their environment file set settings Lakeport accepts, and a refused start is not restarted', () => {
    const envFile = Object.fromEntries(
      read('deploy/systemd/lakeport.env.example')
        .split('\n')
        .filter((line) => /^[A-Z_]+=/.test(line))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    for (const unit of ['lakeport.service', 'lakeport-worker.service', 'lakeport-migrate.service']) {
      const text = read(`deploy/systemd/${unit}`);
      expect(text).toContain('EnvironmentFile=/etc/lakeport/lakeport.env');
      const own = Object.fromEntries([...text.matchAll(/^Environment=([A-Z_]+)=(.*)$/gm)].map((m) => [m[1], m[2]]));
      // The units' own settings must not be in the shared file, where they would win over the unit's.
      expect(Object.keys(own).filter((k) => k in envFile), unit).toEqual([]);
      const config = expectAccepted({ ...envFile, ...own }, unit);
      if (unit !== 'lakeport-migrate.service') expect(text).toMatch(/^RestartPreventExitStatus=2$/m);
      if (unit === 'lakeport.service') expect(config.jobWorkers).toBe(0);
      if (unit === 'lakeport-worker.service') expect(config.workerPort).toBe(9464);
    }
  });
});
