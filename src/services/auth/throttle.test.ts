import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { migrate, openDatabase } from '../../core/db/index.ts';
import { createPostgresDatabaseUrl, createTestApp, TEST_DATABASE_URL, type TestApp } from '../../../test/harness.ts';
import { FailedAttemptThrottle, sourceKey } from './throttle.ts';

// Failed-attempt throttling (docs/auth.md, "Rate limit"): per (client_id, source address), with a
// per-client_id ceiling that only holds back sources never seen to succeed, and per source for the
// admin token. app.inject's `remoteAddress` plays the source address.

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({}, { workers: false });
});
afterAll(async () => t?.close());

const ATTACKER = '203.0.113.9';
const LEGIT = '198.51.100.7';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** A secret of the right shape that is certainly not `secret` (its last character changed). */
const wrong = (secret: string, n = 0) => `${secret.slice(0, -2)}${'abcdefghij'[n % 10]}${secret.endsWith('z') ? 'y' : 'z'}`;

async function secretFor(clientId: string): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: `/auth/clients/${clientId}/credentials`, headers: { 'x-admin-token': t.adminToken }, payload: {} });
  expect(res.statusCode).toBe(200);
  return res.json().secret;
}

function token(clientId: string, secret: string, remoteAddress: string) {
  return t.app.inject({
    method: 'POST',
    url: '/auth/token',
    remoteAddress,
    headers: FORM,
    payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }).toString(),
  });
}

function odata(clientId: string, secret: string, remoteAddress: string) {
  return t.app.inject({
    method: 'GET',
    url: '/odata/api/v4/',
    remoteAddress,
    headers: { authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}` },
  });
}

function admin(adminToken: string, remoteAddress: string) {
  return t.app.inject({ method: 'GET', url: '/auth/clients/nobody/credentials', remoteAddress, headers: { 'x-admin-token': adminToken } });
}

function expectRetryAfter(res: { headers: Record<string, unknown> }) {
  const seconds = Number(res.headers['retry-after']);
  expect(seconds).toBeGreaterThan(0);
  expect(seconds).toBeLessThanOrEqual(60);
}

function tally(statuses: number[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1;
  return counts;
}

describe('token endpoint', () => {
  it("an attacker's bad guesses block the attacker's address, not the right secret from another address", async () => {
    const secret = await secretFor('tina');
    for (let i = 0; i < 10; i++) expect((await token('tina', wrong(secret, i), ATTACKER)).statusCode).toBe(401);
    const blocked = await token('tina', wrong(secret, 10), ATTACKER);
    expect(blocked.statusCode).toBe(429);
    // The right secret from the blocked address is refused too, so a blocked source learns nothing.
    const rightButBlocked = await token('tina', secret, ATTACKER);
    expect(rightButBlocked.statusCode).toBe(429);
    expectRetryAfter(rightButBlocked);
    expect(rightButBlocked.headers['cache-control']).toBe('no-store');
    // OAuth endpoints keep RFC 6749's shape beside Lakeport's {detail, code}.
    expect(rightButBlocked.json()).toMatchObject({ error: 'slow_down', code: 'TOO_MANY_REQUESTS', detail: expect.any(String) });

    const legit = await token('tina', secret, LEGIT);
    expect(legit.statusCode).toBe(200);
    expect(legit.json().access_token).toBeTruthy();
  });

  it('120 parallel bad guesses from one address get at most the limit of verdicts (10 × 401, the rest 429)', async () => {
    const secret = await secretFor('pat');
    const answers = await Promise.all(Array.from({ length: 120 }, (_, i) => token('pat', wrong(secret, i), ATTACKER)));
    const counts = tally(answers.map((r) => r.statusCode));
    expect(counts).toEqual({ 401: 10, 429: 110 });
    for (const r of answers.filter((a) => a.statusCode === 429)) expectRetryAfter(r);
    expect((await token('pat', secret, ATTACKER)).statusCode).toBe(429);
    expect((await token('pat', secret, LEGIT)).statusCode).toBe(200);
  });

  it('past the per-client ceiling, unknown sources are held back while a source that succeeded before keeps working', async () => {
    const secret = await secretFor('cora');
    const known = '192.0.2.10';
    expect((await token('cora', secret, known)).statusCode).toBe(200);
    // Eleven attacker addresses, ten guesses each: 110 failures for cora within the window.
    const statuses: number[] = [];
    for (let source = 1; source <= 11; source++) {
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => token('cora', wrong(secret, i), `203.0.113.${source}`)));
      statuses.push(...answers.map((r) => r.statusCode));
    }
    expect(tally(statuses)).toEqual({ 401: 100, 429: 10 });
    // A source never seen to succeed for cora is held back, even with the right secret...
    const unknown = await token('cora', secret, '192.0.2.77');
    expect(unknown.statusCode).toBe(429);
    expectRetryAfter(unknown);
    // ...while the known source still gets in (and its own mistakes are still answered).
    expect((await token('cora', secret, known)).statusCode).toBe(200);
    expect((await token('cora', wrong(secret), known)).statusCode).toBe(401);
    // Other client_ids are unaffected.
    expect((await token('dana', await secretFor('dana'), '192.0.2.77')).statusCode).toBe(200);
  });

  it('counts an IPv6 source by its /64, so rotating addresses inside it does not help', async () => {
    const secret = await secretFor('ivy');
    for (let i = 1; i <= 10; i++) expect((await token('ivy', wrong(secret, i), `2001:db8:1:2::${i.toString(16)}`)).statusCode).toBe(401);
    expect((await token('ivy', wrong(secret), '2001:db8:1:2:ffff:ffff:ffff:ffff')).statusCode).toBe(429);
    expect((await token('ivy', secret, '2001:db8:1:3::1')).statusCode).toBe(200);
  });

  it('a successful exchange from a known source writes nothing to the throttle', async () => {
    const secret = await secretFor('sam');
    expect((await token('sam', secret, LEGIT)).statusCode).toBe(200);
    const before = await t.db.kysely.selectFrom('auth_failures').selectAll().where('subject', '=', 'sam').execute();
    expect(before).toHaveLength(1);
    expect(before[0]).toMatchObject({ failures: 0 });
    expect(before[0].last_success_at).toBeInstanceOf(Date);
    for (let i = 0; i < 3; i++) expect((await token('sam', secret, LEGIT)).statusCode).toBe(200);
    const after = await t.db.kysely.selectFrom('auth_failures').selectAll().where('subject', '=', 'sam').execute();
    expect(after).toEqual(before);
  });
});

describe('a success racing failures', () => {
  it('is refused when failures counted while its secret was being checked reach the limit', async () => {
    const secret = await secretFor('rhea');
    const source = '203.0.113.77';
    const repo = (t.app.lakeport.auth.tokens as unknown as { repo: { findBySecretHash(hash: string): Promise<unknown> } }).repo;
    const original = repo.findBySecretHash.bind(repo);
    // While the right secret is being looked up, ten wrong guesses from the same source land.
    const spy = vi.spyOn(repo, 'findBySecretHash').mockImplementationOnce(async (hash: string) => {
      const racing = await Promise.all(Array.from({ length: 10 }, (_, i) => token('rhea', wrong(secret, i), source)));
      expect(racing.map((r) => r.statusCode)).toEqual(Array(10).fill(401));
      return original(hash);
    });
    try {
      const right = await token('rhea', secret, source);
      expect(right.statusCode).toBe(429);
      expectRetryAfter(right);
    } finally {
      spy.mockRestore();
    }
    expect((await token('rhea', secret, LEGIT)).statusCode).toBe(200);
  });
});

describe.runIf(TEST_DATABASE_URL)('across servers (PostgreSQL)', () => {
  it('two servers with their own connection pools share one limit', async () => {
    const { url, drop } = await createPostgresDatabaseUrl();
    const [a, b] = [await openDatabase({ databaseUrl: url }), await openDatabase({ databaseUrl: url })];
    try {
      await migrate(a);
      const servers = [new FailedAttemptThrottle(a), new FailedAttemptThrottle(b)];
      const key = { kind: 'client', clientId: 'zoe', source: '203.0.113.5' } as const;
      const verdicts = await Promise.all(Array.from({ length: 120 }, (_, i) => servers[i % 2].recordFailure(key)));
      expect(verdicts.filter((v) => v.retryAfter === 0)).toHaveLength(10);
      expect((await servers[1].check(key)).retryAfter).toBeGreaterThan(0);
      expect((await servers[0].check({ ...key, source: '198.51.100.5' })).retryAfter).toBe(0);
    } finally {
      await a.close();
      await b.close();
      await drop();
    }
  });
});

describe('source addresses', () => {
  it.each([
    ['192.0.2.1', '192.0.2.1'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['::ffff:c000:201', '192.0.2.1'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:DB8:1:2::9', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['64:ff9b::192.0.2.1', '64:ff9b:0:0::/64'],
    [undefined, 'unknown'],
  ])('%s counts as %s', (ip, key) => {
    expect(sourceKey(ip)).toBe(key);
  });

  it('ignores X-Forwarded-For unless trustProxy says whose to believe', async () => {
    const secret = await secretFor('xena');
    // Without trustProxy (the default), a forged header changes nothing: the socket address counts.
    for (let i = 0; i < 10; i++) {
      const res = await t.app.inject({
        method: 'POST', url: '/auth/token', remoteAddress: '203.0.113.88',
        headers: { ...FORM, 'x-forwarded-for': `198.51.100.${i + 1}` },
        payload: new URLSearchParams({ client_id: 'xena', client_secret: wrong(secret, i) }).toString(),
      });
      expect(res.statusCode).toBe(401);
    }
    const forged = await t.app.inject({
      method: 'POST', url: '/auth/token', remoteAddress: '203.0.113.88',
      headers: { ...FORM, 'x-forwarded-for': '198.51.100.200' },
      payload: new URLSearchParams({ client_id: 'xena', client_secret: secret }).toString(),
    });
    expect(forged.statusCode).toBe(429);

    // Behind a trusted proxy, the address it forwards is the source.
    const proxied = await createTestApp({}, { workers: false, trustProxy: ['127.0.0.1'] });
    try {
      const created = await proxied.app.inject({ method: 'POST', url: '/auth/clients/xena/credentials', headers: { 'x-admin-token': proxied.adminToken }, payload: {} });
      const own = created.json().secret as string;
      const via = (xff: string, s: string) =>
        proxied.app.inject({ method: 'POST', url: '/auth/token', headers: { ...FORM, 'x-forwarded-for': xff }, payload: new URLSearchParams({ client_id: 'xena', client_secret: s }).toString() });
      for (let i = 0; i < 10; i++) expect((await via('203.0.113.99', wrong(own, i))).statusCode).toBe(401);
      expect((await via('203.0.113.99', own)).statusCode).toBe(429);
      expect((await via('198.51.100.99', own)).statusCode).toBe(200);
    } finally {
      await proxied.close();
    }
  });
});

describe('OData HTTP Basic', () => {
  it("an attacker's bad guesses block the attacker's address, not the right secret from another address", async () => {
    const secret = await secretFor('olly');
    for (let i = 0; i < 10; i++) {
      const res = await odata('olly', wrong(secret, i), ATTACKER);
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('INVALID_CREDENTIALS');
    }
    const blocked = await odata('olly', secret, ATTACKER);
    expect(blocked.statusCode).toBe(429);
    expectRetryAfter(blocked);
    expect(blocked.json()).toEqual({ detail: expect.any(String), code: 'TOO_MANY_REQUESTS', error: { code: 'TOO_MANY_REQUESTS', message: expect.any(String) } });
    expect((await odata('olly', secret, LEGIT)).statusCode).toBe(200);
  });

  it('shares the counter with the token endpoint', async () => {
    const secret = await secretFor('oren');
    for (let i = 0; i < 10; i++) expect((await token('oren', wrong(secret, i), ATTACKER)).statusCode).toBe(401);
    expect((await odata('oren', secret, ATTACKER)).statusCode).toBe(429);
    expect((await odata('oren', secret, LEGIT)).statusCode).toBe(200);
  });
});

describe('admin token', () => {
  it('is throttled per source address; the right token from another address still works', async () => {
    for (let i = 0; i < 10; i++) {
      const res = await admin(`not-the-admin-token-${i}`, ATTACKER);
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('INVALID_ADMIN_TOKEN');
    }
    const blocked = await admin('not-the-admin-token', ATTACKER);
    expect(blocked.statusCode).toBe(429);
    expectRetryAfter(blocked);
    expect(blocked.json()).toEqual({ detail: expect.any(String), code: 'TOO_MANY_REQUESTS' });
    const rightButBlocked = await admin(t.adminToken, ATTACKER);
    expect(rightButBlocked.statusCode).toBe(429);
    expectRetryAfter(rightButBlocked);
    expect((await admin(t.adminToken, LEGIT)).statusCode).toBe(200);
  });

  it('120 parallel bad admin tokens from one address get at most the limit of verdicts', async () => {
    const source = '203.0.113.200';
    const answers = await Promise.all(Array.from({ length: 120 }, (_, i) => admin(`bad-admin-token-${i}`, source)));
    expect(tally(answers.map((r) => r.statusCode))).toEqual({ 401: 10, 429: 110 });
    expect((await admin(t.adminToken, source)).statusCode).toBe(429);
    expect((await admin(t.adminToken, LEGIT)).statusCode).toBe(200);
  });
});
