/**
 * Domains on /control against a real DNS server on loopback (test/dns-server.ts, dns2): claim,
 * verify (found, missing, wrong value, timeout, SERVFAIL), re-claim, release, conflicts across
 * accounts, name validation, permissions and cross-tenant refusals.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, type TestUser } from '../../../test/clients.ts';
import { startDnsServer, type TestDnsServer } from '../../../test/dns-server.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { silentLogger } from '../../core/logger.ts';
import { dnsTxtResolver } from './dns-txt.ts';
import { DomainService, type DomainVerifiedEvent } from './domain-service.ts';

let t: TestApp;
let dns: TestDnsServer;
let alice: TestUser; // billing_admin of A
let mia: TestUser; // member of A
let bob: TestUser; // billing_admin of B
let carol: TestUser; // no account
let A: string;
let B: string;

const C = '/control/v1';
const domainsOf = (account: string) => `${C}/accounts/${account}/domains`;
const domainUrl = (account: string, domain: string) => `${domainsOf(account)}/${encodeURIComponent(domain)}`;

async function account(user: TestUser, name: string): Promise<string> {
  const res = await user.request('POST', `${C}/accounts`, { name });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().account_id;
}

async function claim(user: TestUser, acct: string, domain: string) {
  const res = await user.request('POST', domainsOf(acct), { domain });
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

/** Publishes the claim's record at the test DNS server, split in two strings as long records are. */
function publish(claimed: { record: { name: string; value: string } }, extra: string[][] = []) {
  const value = claimed.record.value;
  dns.set(claimed.record.name, { txt: [...extra, [value.slice(0, 10), value.slice(10)]] });
}

const verify = (user: TestUser, acct: string, domain: string) => user.request('POST', `${domainUrl(acct, domain)}/verify`);

function refusedWith(res: { statusCode: number; body: string; json(): any }, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json().code).toBe(code);
}

beforeAll(async () => {
  dns = await startDnsServer();
  t = await createTestApp({ dns: { servers: [dns.address], timeoutMs: 200, tries: 1 } }, { workers: false });
  [alice, mia, bob, carol] = await Promise.all(['alice', 'mia', 'bob', 'carol'].map((id) => signIn(t.app, t.adminToken, id)));
  A = await account(alice, 'Acme');
  B = await account(bob, 'Bobco');
  expect((await alice.request('POST', `${C}/accounts/${A}/members`, { identity: 'mia', email: 'mia@example.com', role: 'member' })).statusCode).toBe(201);
  expect((await mia.request('POST', `${C}/accounts/${A}/members/mia/accept`)).statusCode).toBe(200);
});
afterAll(async () => {
  await t?.close();
  await dns?.stop();
});

describe('claiming', () => {
  it('returns the TXT record to publish, and the claim is listed unverified to members', async () => {
    const claimed = await claim(alice, A, 'Claim.Example.');
    expect(claimed).toMatchObject({
      account_id: A,
      domain: 'claim.example',
      domain_unicode: 'claim.example',
      state: 'unverified',
      claimed_by: 'alice',
      verified_at: null,
      last_checked_at: null,
      record: { name: '_lakeport-challenge.claim.example', type: 'TXT', value: `lakeport-domain-verification=${claimed.token}` },
    });
    expect(claimed.token).toMatch(/^[0-9A-Za-z]{22}$/);
    const listed = await mia.request('GET', domainsOf(A));
    expect(listed.statusCode).toBe(200);
    expect(listed.json()).toEqual({ account_id: A, domains: [claimed] });
  });

  it('is for billing_admins: a member may list and verify but not claim or release', async () => {
    refusedWith(await mia.request('POST', domainsOf(A), { domain: 'mia.example' }), 403, 'BILLING_ADMIN_REQUIRED');
    await claim(alice, A, 'perm.example');
    expect((await verify(mia, A, 'perm.example')).statusCode).toBe(200);
    refusedWith(await mia.request('DELETE', domainUrl(A, 'perm.example')), 403, 'BILLING_ADMIN_REQUIRED');
    expect((await alice.request('DELETE', domainUrl(A, 'perm.example'))).statusCode).toBe(200);
  });

  it('stores an IDNA name in punycode and shows its Unicode form; either form addresses it', async () => {
    const claimed = await claim(alice, A, 'Bücher.Example');
    expect(claimed).toMatchObject({ domain: 'xn--bcher-kva.example', domain_unicode: 'bücher.example', record: { name: '_lakeport-challenge.xn--bcher-kva.example' } });
    publish(claimed);
    const verified = await verify(alice, A, 'bücher.example');
    expect(verified.json()).toMatchObject({ state: 'verified', check: { outcome: 'verified' } });
    const released = await alice.request('DELETE', domainUrl(A, 'xn--bcher-kva.example'));
    expect(released.json()).toMatchObject({ domain: 'xn--bcher-kva.example', domain_unicode: 'bücher.example', was_verified: true });
  });

  it('refuses invalid names with a 422 saying why', async () => {
    const cases: Array<[string, RegExp]> = [
      [`${'a'.repeat(64)}.example`, /64 characters; at most 63/],
      ['exa_mple.com', /'_' is not allowed/],
      ['bad!name.com', /'!' is not allowed/],
      ['localhost', /at least two labels/],
      ['xn--a.com', /IDNA/],
      ['a..b.com', /empty label/],
      ['10.0.0.1', /IP address/],
      ['', />=1 characters/],
    ];
    for (const [domain, message] of cases) {
      const res = await alice.request('POST', domainsOf(A), { domain });
      expect(res.statusCode, domain).toBe(422);
      expect(res.json().detail[0].loc).toEqual(['body', 'domain']);
      expect(res.json().detail[0].msg, domain).toMatch(message);
    }
    const path = await verify(alice, A, 'exa_mple.com');
    expect(path.statusCode).toBe(422);
    expect(path.json().detail[0]).toMatchObject({ loc: ['path', 'domain'], msg: expect.stringMatching(/'_'/) });
    expect((await alice.request('GET', domainsOf(A))).json().domains.map((d: { domain: string }) => d.domain)).not.toContain('exa_mple.com');
  });

  it('is a /control endpoint only', async () => {
    expect((await alice.request('GET', `/billing/v1/accounts/${A}/domains`)).statusCode).toBe(404);
    expect((await alice.request('POST', `/billing/v1/accounts/${A}/domains`, { domain: 'x.example' })).statusCode).toBe(404);
  });
});

describe('verifying', () => {
  it('verifies when the record is published (split strings joined, other TXT records beside it)', async () => {
    const claimed = await claim(alice, A, 'ok.example');
    publish(claimed, [['v=spf1 -all']]);
    const res = await verify(mia, A, 'ok.example');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      state: 'verified',
      verified_by: 'mia',
      last_outcome: 'verified',
      last_error: null,
      check: { outcome: 'verified', code: null, retry: false, found: ['v=spf1 -all', claimed.record.value] },
    });
    expect(Date.parse(body.verified_at)).toBeGreaterThan(Date.parse(claimed.claimed_at) - 1);
    expect(body.last_checked_at).toBe(body.verified_at);
    expect(dns.queries).toContain('_lakeport-challenge.ok.example');
  });

  it('reports a missing record (NXDOMAIN, NODATA) as "publish the record"', async () => {
    const claimed = await claim(alice, A, 'missing.example');
    const nx = (await verify(alice, A, 'missing.example')).json();
    expect(nx).toMatchObject({
      state: 'unverified',
      verified_at: null,
      last_outcome: 'record_missing',
      check: { outcome: 'record_missing', code: 'DOMAIN_RECORD_MISSING', dns_code: 'ENOTFOUND', found: [], retry: false },
    });
    expect(nx.check.detail).toContain(`publish a TXT record ${claimed.record.name} with the value ${claimed.record.value}`);
    expect(nx.last_error).toMatch(/^DOMAIN_RECORD_MISSING: /);
    expect(nx.last_checked_at).not.toBeNull();
    dns.set(claimed.record.name, 'nodata');
    expect((await verify(alice, A, 'missing.example')).json().check).toMatchObject({ outcome: 'record_missing', dns_code: 'ENODATA' });
  });

  it('reports a wrong value as "publish the record", showing what was found', async () => {
    const claimed = await claim(alice, A, 'wrong.example');
    dns.set(claimed.record.name, { txt: [['lakeport-domain-verification=', 'not-the-token'], ['other']] });
    const body = (await verify(alice, A, 'wrong.example')).json();
    expect(body).toMatchObject({
      state: 'unverified',
      check: { outcome: 'record_missing', code: 'DOMAIN_RECORD_MISSING', dns_code: null, found: ['lakeport-domain-verification=not-the-token', 'other'] },
      last_found: ['lakeport-domain-verification=not-the-token', 'other'],
    });
    expect(body.check.detail).toMatch(/has TXT records, but not the expected one/);
  });

  it('reports a resolution failure (timeout, SERVFAIL) as "wait and retry"', async () => {
    const claimed = await claim(alice, A, 'flaky.example');
    dns.set(claimed.record.name, 'timeout');
    const timedOut = (await verify(alice, A, 'flaky.example')).json();
    expect(timedOut).toMatchObject({
      state: 'unverified',
      last_outcome: 'dns_unavailable',
      check: { outcome: 'dns_unavailable', code: 'DOMAIN_DNS_UNAVAILABLE', dns_code: 'ETIMEOUT', retry: true, found: [] },
    });
    expect(timedOut.check.detail).toMatch(/wait and try again/);
    dns.set(claimed.record.name, 'servfail');
    expect((await verify(alice, A, 'flaky.example')).json().check).toMatchObject({ outcome: 'dns_unavailable', dns_code: 'ESERVFAIL', retry: true });
  });

  it('keeps a verified domain verified when a later check fails, recording the failure', async () => {
    const claimed = await claim(alice, A, 'kept.example');
    publish(claimed);
    const first = (await verify(alice, A, 'kept.example')).json();
    expect(first.state).toBe('verified');
    dns.set(claimed.record.name, 'servfail');
    const failed = (await verify(mia, A, 'kept.example')).json();
    expect(failed).toMatchObject({ state: 'verified', verified_at: first.verified_at, verified_by: 'alice', last_outcome: 'dns_unavailable', check: { outcome: 'dns_unavailable' } });
    expect(failed.last_error).toMatch(/^DOMAIN_DNS_UNAVAILABLE: /);
    expect(Date.parse(failed.last_checked_at)).toBeGreaterThanOrEqual(Date.parse(first.last_checked_at));
    dns.set(claimed.record.name, 'nxdomain');
    expect((await verify(mia, A, 'kept.example')).json()).toMatchObject({ state: 'verified', last_outcome: 'record_missing' });
    publish(claimed);
    const again = (await verify(mia, A, 'kept.example')).json();
    expect(again).toMatchObject({ state: 'verified', verified_at: first.verified_at, verified_by: 'alice', last_outcome: 'verified', last_error: null });
  });

  it('re-claiming returns the same token and keeps the verification', async () => {
    const claimed = await claim(alice, A, 'again.example');
    publish(claimed);
    const verified = (await verify(alice, A, 'again.example')).json();
    const reclaimed = await claim(alice, A, 'AGAIN.example');
    expect(reclaimed.token).toBe(claimed.token);
    expect(reclaimed).toMatchObject({ state: 'verified', verified_at: verified.verified_at, claimed_at: claimed.claimed_at, claimed_by: 'alice' });
    const unverified = await claim(alice, A, 'again2.example');
    expect((await claim(alice, A, 'again2.example')).token).toBe(unverified.token);
  });

  it('answers 404 for a domain the account has not claimed', async () => {
    refusedWith(await verify(alice, A, 'never.example'), 404, 'DOMAIN_NOT_FOUND');
    refusedWith(await alice.request('DELETE', domainUrl(A, 'never.example')), 404, 'DOMAIN_NOT_FOUND');
  });
});

describe('across accounts', () => {
  it('refuses a claim of a domain another account has verified (409)', async () => {
    const claimed = await claim(alice, A, 'taken.example');
    publish(claimed);
    expect((await verify(alice, A, 'taken.example')).json().state).toBe('verified');
    refusedWith(await bob.request('POST', domainsOf(B), { domain: 'Taken.Example' }), 409, 'DOMAIN_VERIFIED_ELSEWHERE');
    expect((await bob.request('GET', domainsOf(B))).json().domains).toEqual([]);
  });

  it('lets two accounts hold unverified claims; once one verifies, the other verify and re-claim are 409', async () => {
    const mine = await claim(alice, A, 'shared.example');
    const theirs = await claim(bob, B, 'shared.example');
    expect(theirs.token).not.toBe(mine.token);
    // Both records may be published at once; each account verifies with its own.
    dns.set(mine.record.name, { txt: [[mine.record.value], [theirs.record.value]] });
    expect((await verify(alice, A, 'shared.example')).json().state).toBe('verified');
    refusedWith(await verify(bob, B, 'shared.example'), 409, 'DOMAIN_VERIFIED_ELSEWHERE');
    refusedWith(await bob.request('POST', domainsOf(B), { domain: 'shared.example' }), 409, 'DOMAIN_VERIFIED_ELSEWHERE');
    // Bob's claim stays (unverified) and can be released.
    expect((await bob.request('GET', domainsOf(B))).json().domains).toEqual([expect.objectContaining({ domain: 'shared.example', state: 'unverified' })]);
    expect((await bob.request('DELETE', domainUrl(B, 'shared.example'))).json()).toMatchObject({ was_verified: false });
  });

  it('after a release, another account claims and verifies the domain', async () => {
    const mine = await claim(alice, A, 'moving.example');
    publish(mine);
    expect((await verify(alice, A, 'moving.example')).json().state).toBe('verified');
    const released = await alice.request('DELETE', domainUrl(A, 'moving.example'));
    expect(released.statusCode).toBe(200);
    expect(released.json()).toEqual({ message: expect.any(String), account_id: A, domain: 'moving.example', domain_unicode: 'moving.example', was_verified: true });
    expect((await alice.request('GET', domainsOf(A))).json().domains.map((d: { domain: string }) => d.domain)).not.toContain('moving.example');
    const theirs = await claim(bob, B, 'moving.example');
    expect(theirs.token).not.toBe(mine.token);
    // The old record (alice's token) does not verify bob's claim; his own does.
    expect((await verify(bob, B, 'moving.example')).json()).toMatchObject({ state: 'unverified', check: { outcome: 'record_missing', found: [mine.record.value] } });
    publish(theirs);
    expect((await verify(bob, B, 'moving.example')).json()).toMatchObject({ state: 'verified', verified_by: 'bob' });
    refusedWith(await alice.request('POST', domainsOf(A), { domain: 'moving.example' }), 409, 'DOMAIN_VERIFIED_ELSEWHERE');
  });

  it("drops a deactivated account's verification when another account verifies", async () => {
    const dave = await signIn(t.app, t.adminToken, 'dave');
    const D = await account(dave, 'Gone');
    const old = await claim(dave, D, 'orphan.example');
    publish(old);
    expect((await verify(dave, D, 'orphan.example')).json().state).toBe('verified');
    expect((await dave.request('DELETE', `${C}/accounts/${D}`)).statusCode).toBe(200);
    const mine = await claim(alice, A, 'orphan.example');
    publish(mine);
    expect((await verify(alice, A, 'orphan.example')).json().state).toBe('verified');
    expect(await t.app.lakeport.domains.isDomainVerifiedBy(D, 'orphan.example')).toBe(false);
  });

  it("refuses another account's members and outsiders everywhere, as the account routes do (403 NOT_A_MEMBER; 404 for no such account)", async () => {
    const claimed = await claim(alice, A, 'private.example');
    publish(claimed);
    for (const stranger of [bob, carol]) {
      refusedWith(await stranger.request('GET', domainsOf(A)), 403, 'NOT_A_MEMBER');
      refusedWith(await stranger.request('POST', domainsOf(A), { domain: 'private.example' }), 403, 'NOT_A_MEMBER');
      refusedWith(await verify(stranger, A, 'private.example'), 403, 'NOT_A_MEMBER');
      refusedWith(await stranger.request('DELETE', domainUrl(A, 'private.example')), 403, 'NOT_A_MEMBER');
    }
    refusedWith(await bob.request('GET', domainsOf('acct_nope')), 404, 'ACCOUNT_NOT_FOUND');
    refusedWith(await verify(bob, 'acct_nope', 'private.example'), 404, 'ACCOUNT_NOT_FOUND');
    // Nothing was changed or checked on their behalf.
    const [row] = (await alice.request('GET', domainsOf(A))).json().domains.filter((d: { domain: string }) => d.domain === 'private.example');
    expect(row).toMatchObject({ state: 'unverified', last_checked_at: null });
  });
});

describe('a narrowed credential', () => {
  it('may list domains but not claim, verify or release them', async () => {
    const narrowed = await signIn(t.app, t.adminToken, 'alice', { permissions: [['sales.*', 'owner']] });
    await claim(alice, A, 'narrow.example');
    expect((await narrowed.request('GET', domainsOf(A))).statusCode).toBe(200);
    refusedWith(await narrowed.request('POST', domainsOf(A), { domain: 'narrow2.example' }), 403, 'CREDENTIAL_NARROWED');
    refusedWith(await verify(narrowed, A, 'narrow.example'), 403, 'CREDENTIAL_NARROWED');
    refusedWith(await narrowed.request('DELETE', domainUrl(A, 'narrow.example')), 403, 'CREDENTIAL_NARROWED');
  });
});

describe('DomainService for other modules', () => {
  it('answers whether an account has a domain verified, by any spelling of the name', async () => {
    const claimed = await claim(alice, A, 'sso.example');
    const domains = t.app.lakeport.domains;
    expect(await domains.isDomainVerifiedBy(A, 'sso.example')).toBe(false);
    publish(claimed);
    await verify(alice, A, 'sso.example');
    expect(await domains.isDomainVerifiedBy(A, 'SSO.Example.')).toBe(true);
    expect(await domains.isDomainVerifiedBy(B, 'sso.example')).toBe(false);
    expect(await domains.isDomainVerifiedBy(A, 'not a domain')).toBe(false);
  });

  it('calls the verified hook once, when a claim first becomes verified, and survives its failure', async () => {
    const events: DomainVerifiedEvent[] = [];
    let fail = true;
    const service = new DomainService({
      db: t.db,
      accounts: t.app.lakeport.accounts,
      resolveTxt: dnsTxtResolver({ servers: [dns.address], timeoutMs: 200, tries: 1 }),
      onVerified: (event) => {
        events.push(event);
        if (fail) throw new Error('notifications are down');
      },
      log: silentLogger,
    });
    const claimed = await service.claim('alice', A, 'hook.example');
    expect((await service.verify('alice', A, 'hook.example')).check.outcome).toBe('record_missing');
    expect(events).toEqual([]);
    publish(claimed);
    expect((await service.verify('mia', A, 'hook.example')).state).toBe('verified');
    fail = false;
    expect((await service.verify('alice', A, 'hook.example')).state).toBe('verified');
    expect(events).toEqual([{ account_id: A, domain: 'hook.example', domain_unicode: 'hook.example', verified_by: 'mia', verified_at: expect.any(String) }]);
    // Verifies racing each other notify once.
    const raced = await service.claim('alice', A, 'race.example');
    publish(raced);
    const results = await Promise.all([service.verify('alice', A, 'race.example'), service.verify('mia', A, 'race.example'), service.verify('alice', A, 'race.example')]);
    expect(results.map((r) => r.state)).toEqual(['verified', 'verified', 'verified']);
    expect(new Set(results.map((r) => r.verified_at)).size).toBe(1);
    expect(events.filter((e) => e.domain === 'race.example')).toHaveLength(1);
  });
});
