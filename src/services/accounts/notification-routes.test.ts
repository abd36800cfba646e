/**
 * Notifications on /control: each event writes the right notification to the right people (and to
 * no one else), in the event's transaction; the feed (order, limit, cursor, unread count), read,
 * dismiss and read-all; another identity's notification is 404; narrowed credentials read only;
 * retention.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { startDnsServer, type TestDnsServer } from '../../../test/dns-server.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { recordingLogger } from '../../../test/recording-logger.ts';
import { accountsUpkeep } from './index.ts';
import { events } from './notification-events.ts';
import { NotificationService, READ_RETENTION_MS, UNREAD_RETENTION_MS } from './notification-service.ts';

let t: TestApp;
let dns: TestDnsServer;
let notifications: NotificationService;
const users: Record<string, TestUser> = {};
let A: string; // alice's account
let D: string; // dave's account (another tenant)

const C = '/control/v1';
const DAY = 86_400_000;

async function account(user: TestUser, name: string): Promise<string> {
  const res = await user.request('POST', `${C}/accounts`, { name });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().account_id;
}

async function ok(res: Promise<{ statusCode: number; body: string; json(): any }>, status = 200) {
  const r = await res;
  expect(r.statusCode, r.body).toBe(status);
  return r.json();
}

async function feedOf(user: TestUser, query = ''): Promise<{ notifications: any[]; unread: number; next_before: string | null }> {
  return ok(user.request('GET', `${C}/notifications${query}`));
}

/** Everyone's notifications of one type, as {identity: [notification, …]}. */
async function whoGot(type: string, names = Object.keys(users)): Promise<Record<string, any[]>> {
  const got: Record<string, any[]> = {};
  for (const name of names) {
    const mine = (await feedOf(users[name], '?limit=200')).notifications.filter((n) => n.type === type);
    if (mine.length > 0) got[name] = mine;
  }
  return got;
}

/** Marks everything read and dismissed, so each test starts from empty feeds. */
async function clearAll() {
  for (const user of Object.values(users)) {
    for (const n of (await feedOf(user, '?limit=200')).notifications) await ok(user.request('POST', `${C}/notifications/${n.notification_id}/dismiss`));
  }
}

beforeAll(async () => {
  dns = await startDnsServer();
  t = await createTestApp({ dns: { servers: [dns.address], timeoutMs: 200, tries: 1 } }, { workers: false });
  notifications = new NotificationService(t.db);
  const names = ['alice', 'carol', 'bob', 'mia', 'dave', 'eve', 'wendy', 'wes', 'olga', 'pete', 'zed', 'yan'];
  for (const name of names) users[name] = await signIn(t.app, t.adminToken, name);
  const { alice, carol, dave } = users;
  A = await account(alice, 'Acme');
  D = await account(dave, 'Daveco');
  await ok(alice.request('POST', `${C}/accounts/${A}/members`, { identity: 'carol', email: 'carol@example.com', role: 'billing_admin' }), 201);
  await ok(carol.request('POST', `${C}/accounts/${A}/members/carol/accept`));
  await ok(alice.request('POST', `${C}/accounts/${A}/members`, { identity: 'mia', email: 'mia@example.com', role: 'member' }), 201);
  await ok(users.mia.request('POST', `${C}/accounts/${A}/members/mia/accept`));
  await clearAll();
});
afterAll(async () => {
  await t?.close();
  await dns?.stop();
});

describe('membership events', () => {
  it('an invite notifies the invitee only, with what, when, who and a link', async () => {
    const before = Date.now();
    await ok(users.alice.request('POST', `${C}/accounts/${A}/members`, { identity: 'bob', email: 'bob@example.com', role: 'member' }), 201);
    const got = await whoGot('invite.received');
    expect(Object.keys(got)).toEqual(['bob']);
    const [n] = got.bob;
    expect(n).toMatchObject({
      type: 'invite.received',
      actor: 'alice',
      account_id: A,
      read: false,
      read_at: null,
      dismissed_at: null,
      resource: { kind: 'invite', id: 'bob', path: `/control/v1/accounts/${A}/members/bob/accept` },
      data: { role: 'member' },
    });
    expect(n.message).toContain('alice invited you');
    expect(n.notification_id).toMatch(/^ntf_/);
    expect(Date.parse(n.created_at)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(n.data.invite_expires_at)).toBeGreaterThan(Date.now() + 6 * DAY);
  });

  it('an accepted invite notifies the billing_admins and the inviter, not the new member or plain members', async () => {
    // carol invites yan, then loses billing_admin: she is told as the inviter, alice as billing_admin.
    await ok(users.carol.request('POST', `${C}/accounts/${A}/members`, { identity: 'yan', email: 'yan@example.com', role: 'member' }), 201);
    await ok(users.alice.request('PATCH', `${C}/accounts/${A}/members/carol`, { role: 'member' }));
    await ok(users.yan.request('POST', `${C}/accounts/${A}/members/yan/accept`));
    const got = await whoGot('invite.accepted');
    expect(Object.keys(got).sort()).toEqual(['alice', 'carol']);
    expect(got.alice[0]).toMatchObject({ actor: 'yan', resource: { kind: 'member', id: 'yan', path: `/control/v1/accounts/${A}/members/yan` }, data: { invited_by: 'carol', role: 'member' } });
    await ok(users.alice.request('PATCH', `${C}/accounts/${A}/members/carol`, { role: 'billing_admin' }));
  });

  it('a role change notifies that member only, and an unchanged role nobody', async () => {
    await clearAll();
    await ok(users.alice.request('PATCH', `${C}/accounts/${A}/members/mia`, { role: 'billing_admin' }));
    await ok(users.alice.request('PATCH', `${C}/accounts/${A}/members/mia`, { role: 'billing_admin' }));
    const got = await whoGot('member.role_changed');
    expect(Object.keys(got)).toEqual(['mia']);
    expect(got.mia).toHaveLength(1);
    expect(got.mia[0]).toMatchObject({ actor: 'alice', data: { from: 'member', to: 'billing_admin' }, resource: { path: `/control/v1/accounts/${A}/members/mia` } });
    await ok(users.alice.request('PATCH', `${C}/accounts/${A}/members/mia`, { role: 'member' }));
  });

  it('a removal notifies the removed member; leaving notifies the billing_admins', async () => {
    await clearAll();
    await ok(users.alice.request('DELETE', `${C}/accounts/${A}/members/yan`));
    expect(Object.keys(await whoGot('member.removed'))).toEqual(['yan']);

    await ok(users.mia.request('DELETE', `${C}/accounts/${A}/members/mia`));
    const left = await whoGot('member.left');
    expect(Object.keys(left).sort()).toEqual(['alice', 'carol']);
    expect(left.alice[0]).toMatchObject({ actor: 'mia', data: { identity: 'mia', role: 'member' } });
  });

  it('a withdrawn invite notifies the invitee; a declined one the billing_admins', async () => {
    await clearAll();
    await ok(users.alice.request('DELETE', `${C}/accounts/${A}/members/bob`));
    expect(Object.keys(await whoGot('invite.withdrawn'))).toEqual(['bob']);

    await ok(users.carol.request('POST', `${C}/accounts/${A}/members`, { identity: 'eve', email: 'eve@example.com', role: 'member' }), 201);
    await ok(users.eve.request('DELETE', `${C}/accounts/${A}/members/eve`));
    const declined = await whoGot('invite.declined');
    expect(Object.keys(declined).sort()).toEqual(['alice', 'carol']);
    expect(declined.carol[0].data).toEqual({ identity: 'eve', invited_by: 'carol' });
  });

  it('a refused change writes nothing, and a failed notification write undoes the change (same transaction)', async () => {
    await clearAll();
    // eve joins dave's account, so alice's invite is refused (409) before anything is written.
    await ok(users.dave.request('POST', `${C}/accounts/${D}/members`, { identity: 'eve', email: 'eve@example.com', role: 'member' }), 201);
    await ok(users.eve.request('POST', `${C}/accounts/${D}/members/eve/accept`));
    expect((await users.alice.request('POST', `${C}/accounts/${A}/members`, { identity: 'eve', email: 'eve@example.com', role: 'member' })).statusCode).toBe(409);
    expect((await whoGot('invite.received', ['eve'])).eve.map((n) => n.actor)).toEqual(['dave']);

    await sql`CREATE FUNCTION refuse_zed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.recipient = 'zed' THEN RAISE EXCEPTION 'no notifications for zed'; END IF; RETURN NEW; END $$`.execute(t.db.kysely);
    await sql`CREATE TRIGGER refuse_zed BEFORE INSERT ON notifications FOR EACH ROW EXECUTE FUNCTION refuse_zed()`.execute(t.db.kysely);
    try {
      const res = await users.alice.request('POST', `${C}/accounts/${A}/members`, { identity: 'zed', email: 'zed@example.com', role: 'member' });
      expect(res.statusCode).toBe(500);
    } finally {
      await sql`DROP TRIGGER refuse_zed ON notifications`.execute(t.db.kysely);
      await sql`DROP FUNCTION refuse_zed()`.execute(t.db.kysely);
    }
    const members = await ok(users.alice.request('GET', `${C}/accounts/${A}/members`));
    expect(members.map((m: { identity: string }) => m.identity)).not.toContain('zed');
  });
});

describe('workspace events', () => {
  const ws = 'notify_ws';

  it('deletion, restore and purge notify the members of the record and the owners of the grants', async () => {
    await clearAll();
    // wendy: billing_admin and owner; wes: reader member; olga: owner member; pete: owner by a later policy.
    const wsAccount = await createWorkspace(users.wendy, ws, { wes: 'reader', olga: 'owner' });
    await ok(users.wendy.request('POST', `/policy/v1/access/workspace/${ws}/policies`, { principal: { identity: 'pete' }, role: 'owner', pattern: `${ws}.*` }), 201);

    const deleted = await ok(users.wendy.request('DELETE', `/billing/v1/workspaces/${ws}`));
    const soft = await whoGot('workspace.soft_deleted');
    expect(Object.keys(soft).sort()).toEqual(['olga', 'pete', 'wes']);
    expect(soft.wes[0]).toMatchObject({
      actor: 'wendy',
      resource: { kind: 'workspace', id: ws, path: `/control/v1/accounts/${wsAccount}/workspaces` },
      data: { workspace: ws, purge_after: deleted.purge_after, restore_path: `/billing/v1/workspaces/${ws}/restore` },
    });
    expect(soft.wes[0].message).toContain(deleted.purge_after);

    await ok(users.olga.request('POST', `/billing/v1/workspaces/${ws}/restore`));
    expect(Object.keys(await whoGot('workspace.restored')).sort()).toEqual(['pete', 'wendy', 'wes']);

    await ok(users.wendy.request('DELETE', `/billing/v1/workspaces/${ws}`));
    expect(await t.app.lakeport.workspaces.purgeExpired(new Date(Date.now() + 2 * DAY))).toContain(ws);
    const purged = await whoGot('workspace.purged');
    expect(Object.keys(purged).sort()).toEqual(['olga', 'pete', 'wendy', 'wes']);
    expect(purged.wendy[0]).toMatchObject({ actor: null, data: { workspace: ws, deleted_by: 'wendy' } });
  });
});

describe('domain and payment events', () => {
  it('a verified domain notifies the billing_admins other than the verifier', async () => {
    await clearAll();
    const claimed = await ok(users.alice.request('POST', `${C}/accounts/${A}/domains`, { domain: 'notify.example' }), 201);
    dns.set(claimed.record.name, { txt: [[claimed.record.value]] });
    await ok(users.carol.request('POST', `${C}/accounts/${A}/domains/notify.example/verify`));
    const got = await whoGot('domain.verified');
    expect(Object.keys(got)).toEqual(['alice']);
    expect(got.alice[0]).toMatchObject({ actor: 'carol', resource: { kind: 'domain', id: 'notify.example' }, data: { domain: 'notify.example' } });
  });

  it("the Notifier port writes inside the caller's transaction: a rollback leaves no notification", async () => {
    await clearAll();
    const event = events.paymentDeclined({ accountId: A, paymentId: 'pay_rollback', amount: 1, currency: 'usd', actor: null, reason: 'card_declined' });
    await expect(
      t.db.kysely.transaction().execute(async (trx) => {
        await notifications.notifyBillingAdmins(A, event, { within: trx });
        throw new Error('the payment write failed');
      }),
    ).rejects.toThrow('the payment write failed');
    expect(await whoGot('payment.declined')).toEqual({});
  });

  it('the Notifier port sends payment outcomes to the billing_admins of that account only', async () => {
    await clearAll();
    await notifications.notifyBillingAdmins(A, events.paymentDeclined({ accountId: A, paymentId: 'pay_1', amount: 500, currency: 'usd', actor: null, reason: 'card_declined' }));
    await notifications.notifyBillingAdmins(A, events.paymentSucceeded({ accountId: A, paymentId: 'pay_2', amount: 700, currency: 'usd', actor: 'alice' }));
    const declined = await whoGot('payment.declined');
    expect(Object.keys(declined).sort()).toEqual(['alice', 'carol']);
    expect(declined.alice[0]).toMatchObject({ actor: null, data: { payment_id: 'pay_1', reason: 'card_declined' }, resource: { kind: 'payment', path: `/control/v1/accounts/${A}/payments` } });
    expect(Object.keys(await whoGot('payment.succeeded'))).toEqual(['carol']);
  });
});

describe('the feed', () => {
  const poke = (recipient: string, i: number) =>
    notifications.notify([recipient], { ...events.paymentSucceeded({ accountId: 'acct_x', paymentId: `pay_${i}`, amount: i, currency: 'usd', actor: null }) });

  it('is newest first, limited, paged with before, and counts all unread', async () => {
    for (let i = 1; i <= 5; i++) await poke('zed', i);
    const all = await feedOf(users.zed);
    expect(all.unread).toBe(5);
    expect(all.notifications.map((n) => n.data.payment_id)).toEqual(['pay_5', 'pay_4', 'pay_3', 'pay_2', 'pay_1']);
    expect(all.next_before).toBeNull();

    const first = await feedOf(users.zed, '?limit=2');
    expect(first.notifications.map((n) => n.data.payment_id)).toEqual(['pay_5', 'pay_4']);
    expect(first.unread).toBe(5);
    const second = await feedOf(users.zed, `?limit=2&before=${first.next_before}`);
    expect(second.notifications.map((n) => n.data.payment_id)).toEqual(['pay_3', 'pay_2']);
    const third = await feedOf(users.zed, `?limit=2&before=${second.next_before}`);
    expect(third.notifications.map((n) => n.data.payment_id)).toEqual(['pay_1']);
    expect(third.next_before).toBeNull();
  });

  it('refuses a limit outside 1-200 and an unknown cursor (422)', async () => {
    for (const q of ['?limit=201', '?limit=0', '?limit=x', '?before=nope', '?before=ntf_unknown']) {
      const res = await users.zed.request('GET', `${C}/notifications${q}`);
      expect(res.statusCode, q).toBe(422);
      expect(res.json().detail[0].loc[0]).toBe('query');
    }
    expect((await feedOf(users.zed, '?limit=200')).notifications.length).toBe(5);
  });

  it('read, dismiss and read-all change the unread count; dismissed ones leave the feed', async () => {
    const [n5, n4] = (await feedOf(users.zed)).notifications;
    const read = await ok(users.zed.request('POST', `${C}/notifications/${n5.notification_id}/read`));
    expect(read).toMatchObject({ notification_id: n5.notification_id, read: true, dismissed_at: null });
    expect(read.read_at).not.toBeNull();
    expect((await ok(users.zed.request('POST', `${C}/notifications/${n5.notification_id}/read`))).read_at).toBe(read.read_at);
    expect((await feedOf(users.zed)).unread).toBe(4);

    const dismissed = await ok(users.zed.request('POST', `${C}/notifications/${n4.notification_id}/dismiss`));
    expect(dismissed).toMatchObject({ read: true });
    expect(dismissed.dismissed_at).not.toBeNull();
    const after = await feedOf(users.zed);
    expect(after.unread).toBe(3);
    expect(after.notifications.map((n) => n.notification_id)).not.toContain(n4.notification_id);
    expect(after.notifications).toHaveLength(4);

    expect(await ok(users.zed.request('POST', `${C}/notifications/read-all`))).toEqual({ marked: 3, unread: 0 });
    expect(await ok(users.zed.request('POST', `${C}/notifications/read-all`))).toEqual({ marked: 0, unread: 0 });
    expect((await feedOf(users.zed)).notifications.every((n) => n.read)).toBe(true);
  });

  it("another identity's notification is 404 on read and dismiss, and never in its feed", async () => {
    await poke('zed', 99);
    const [mine] = (await feedOf(users.zed)).notifications;
    for (const action of ['read', 'dismiss']) {
      const res = await users.dave.request('POST', `${C}/notifications/${mine.notification_id}/${action}`);
      expect(res.statusCode).toBe(404);
      expect(res.json().code).toBe('NOTIFICATION_NOT_FOUND');
    }
    expect((await users.dave.request('POST', `${C}/notifications/ntf_doesnotexist/read`)).statusCode).toBe(404);
    const daves = await feedOf(users.dave, '?limit=200');
    expect(daves.notifications.map((n) => n.notification_id)).not.toContain(mine.notification_id);
    expect(daves.notifications.every((n) => n.account_id !== A)).toBe(true);
    // dave's read-all leaves zed's unread one alone
    await ok(users.dave.request('POST', `${C}/notifications/read-all`));
    expect((await feedOf(users.zed)).unread).toBe(1);
    // and the cursor of another identity's notification is unknown here
    expect((await users.dave.request('GET', `${C}/notifications?before=${mine.notification_id}`)).statusCode).toBe(422);
  });

  it('a narrowed credential reads the feed but may not change it; /billing has no feed', async () => {
    const narrowed = await signIn(t.app, t.adminToken, 'zed', { permissions: [['sales.*', 'reader']] });
    const [n] = (await feedOf(narrowed)).notifications;
    expect(n).toBeDefined();
    for (const path of [`${n.notification_id}/read`, `${n.notification_id}/dismiss`, 'read-all']) {
      const res = await narrowed.request('POST', `${C}/notifications/${path}`);
      expect(res.statusCode).toBe(403);
      expect(res.json().code).toBe('CREDENTIAL_NARROWED');
    }
    expect((await feedOf(users.zed)).unread).toBe(1);
    expect((await users.zed.request('GET', '/billing/v1/notifications')).statusCode).toBe(404);
  });
});

describe('retention', () => {
  it('deletes read notifications after 90 days and unread ones after a year', async () => {
    const ages: Record<string, { days: number; read: boolean }> = {
      pay_r30: { days: 30, read: true },
      pay_r91: { days: 91, read: true },
      pay_u100: { days: 100, read: false },
      pay_u366: { days: 366, read: false },
    };
    for (const [id, age] of Object.entries(ages)) {
      await notifications.notify(['yan'], events.paymentSucceeded({ accountId: 'acct_x', paymentId: id, amount: 1, currency: 'usd', actor: null }));
      const [n] = (await feedOf(users.yan)).notifications;
      if (age.read) await ok(users.yan.request('POST', `${C}/notifications/${n.notification_id}/read`));
      await t.db.kysely
        .updateTable('notifications')
        .set({ created_at: new Date(Date.now() - age.days * DAY) })
        .where('notification_id', '=', n.notification_id)
        .execute();
    }
    expect(READ_RETENTION_MS).toBe(90 * DAY);
    expect(UNREAD_RETENTION_MS).toBe(365 * DAY);
    const zedBefore = (await feedOf(users.zed, '?limit=200')).notifications.length;
    expect(await notifications.purgeExpired()).toBe(2);
    const left = (await feedOf(users.yan, '?limit=200')).notifications.filter((n) => n.type === 'payment.succeeded').map((n) => n.data.payment_id);
    expect(left.sort()).toEqual(['pay_r30', 'pay_u100']);
    expect((await feedOf(users.zed, '?limit=200')).notifications.length).toBe(zedBefore);
  });

  it("runs in the account service's upkeep, which logs what it deleted and what failed", async () => {
    await notifications.notify(['yan'], events.paymentSucceeded({ accountId: 'acct_x', paymentId: 'pay_old', amount: 1, currency: 'usd', actor: null }));
    await t.db.kysely.updateTable('notifications').set({ created_at: new Date(Date.now() - 400 * DAY) }).where('recipient', '=', 'yan').execute();
    const { log, entries } = recordingLogger();
    await accountsUpkeep({ workspaces: t.app.lakeport.workspaces, notifications, log });
    expect(entries).toContainEqual(expect.objectContaining({ level: 'info', message: 'deleted notifications past retention' }));
    expect((await feedOf(users.yan, '?limit=200')).notifications).toEqual([]);

    const failing = recordingLogger();
    await accountsUpkeep({ workspaces: { purgeExpired: async () => [] }, notifications: { purgeExpired: () => Promise.reject(new Error('db down')) }, log: failing.log });
    expect(failing.entries).toContainEqual(expect.objectContaining({ level: 'error', message: 'notification purge failed' }));
  });
});
