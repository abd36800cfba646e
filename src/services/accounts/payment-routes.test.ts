/**
 * Payment method and payments through the HTTP API with the sandbox processor (the default), on
 * both /billing and /control: every endpoint, transition and error, who may, cross-tenant refusals,
 * Idempotency-Key replays and the event hook.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import type { PaymentEvent } from './payment-service.ts';

let t: TestApp;
const events: PaymentEvent[] = [];
beforeAll(async () => {
  t = await createTestApp({ onPaymentEvent: (event) => void events.push(event) });
});
afterAll(async () => t.close());

const PREFIXES = ['/billing', '/control'] as const;
let seq = 0;

/** An account with its billing_admin, a plain member and an outsider who is billing_admin of another account. */
async function setup(prefix: string) {
  const n = ++seq;
  const admin = await signIn(t.app, t.adminToken, `pay-admin-${n}`);
  const member = await signIn(t.app, t.adminToken, `pay-member-${n}`);
  const outsider = await signIn(t.app, t.adminToken, `pay-outsider-${n}`);
  const created = await admin.request('POST', `${prefix}/v1/accounts`, { name: `Acme ${n}` });
  expect(created.statusCode, created.body).toBe(201);
  const accountId = created.json().account_id as string;
  expect((await admin.request('POST', `${prefix}/v1/accounts/${accountId}/members`, { identity: member.identity, email: 'm@example.com', role: 'member' })).statusCode).toBe(201);
  expect((await member.request('POST', `${prefix}/v1/accounts/${accountId}/members/${member.identity}/accept`)).statusCode).toBe(200);
  expect((await outsider.request('POST', `${prefix}/v1/accounts`, { name: `Other ${n}` })).statusCode).toBe(201);
  const base = `${prefix}/v1/accounts/${accountId}`;
  return { admin, member, outsider, accountId, base };
}

const VISA = { processor_payment_method_id: 'pm_card_visa', brand: 'visa', last4: '4242' };
const MASTERCARD = { processor_payment_method_id: 'pm_card_mastercard', brand: 'mastercard', last4: '4444' };

function pay(user: TestUser, base: string, body: unknown, key?: string) {
  return t.app.inject({
    method: 'POST',
    url: `${base}/payments`,
    headers: { authorization: `Bearer ${user.token}`, ...(key === undefined ? {} : { 'idempotency-key': key }) },
    payload: body as object,
  });
}

describe.each(PREFIXES)('payment method on %s', (prefix) => {
  it('is null until attached, then attached, replaced and detached (204, and a no-op 204)', async () => {
    const { admin, member, base } = await setup(prefix);
    const none = await member.request('GET', `${base}/payment-methods`);
    expect(none.statusCode).toBe(200);
    expect(none.body).toBe('null');

    const attached = await admin.request('POST', `${base}/payment-methods`, VISA);
    expect(attached.statusCode, attached.body).toBe(200);
    expect(attached.json()).toMatchObject({ processor: 'sandbox', processor_payment_method_id: 'pm_card_visa', brand: 'visa', last4: '4242', livemode: false, attached_by: admin.identity });
    expect((await member.request('GET', `${base}/payment-methods`)).json()).toMatchObject({ processor_payment_method_id: 'pm_card_visa' });

    const replaced = await admin.request('POST', `${base}/payment-methods`, { ...MASTERCARD, brand: 'MasterCard' });
    expect(replaced.statusCode, replaced.body).toBe(200);
    expect(replaced.json()).toMatchObject({ processor_payment_method_id: 'pm_card_mastercard', brand: 'mastercard', last4: '4444' });
    expect((await admin.request('GET', `${base}/payment-methods`)).json().processor_payment_method_id).toBe('pm_card_mastercard');

    const detached = await admin.request('DELETE', `${base}/payment-methods`);
    expect(detached.statusCode).toBe(204);
    expect(detached.body).toBe('');
    expect((await admin.request('GET', `${base}/payment-methods`)).body).toBe('null');
    expect((await admin.request('DELETE', `${base}/payment-methods`)).statusCode).toBe(204);
  });

  it('refuses an unknown method at attach with the processor reason, and a brand/last4 that the processor contradicts', async () => {
    const { admin, base } = await setup(prefix);
    const unknown = await admin.request('POST', `${base}/payment-methods`, { processor_payment_method_id: 'pm_made_up', brand: 'visa', last4: '4242' });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json()).toMatchObject({ code: 'PAYMENT_METHOD_REJECTED', processor_code: 'resource_missing' });
    expect(unknown.json().detail).toContain('pm_made_up');
    const mismatch = await admin.request('POST', `${base}/payment-methods`, { ...VISA, last4: '1111' });
    expect(mismatch.statusCode).toBe(400);
    expect(mismatch.json().code).toBe('PAYMENT_METHOD_MISMATCH');
    expect((await admin.request('GET', `${base}/payment-methods`)).body).toBe('null');
    const invalid = await admin.request('POST', `${base}/payment-methods`, { processor_payment_method_id: 'pm card', brand: 'visa', last4: '42' });
    expect(invalid.statusCode).toBe(422);
    expect(invalid.json().detail.map((d: { loc: string[] }) => d.loc.join('.'))).toEqual(expect.arrayContaining(['body.processor_payment_method_id', 'body.last4']));
  });

  it('lets only the billing_admin write; a member reads; another account is refused as existing account routes refuse non-members (403 NOT_A_MEMBER)', async () => {
    const { admin, member, outsider, base } = await setup(prefix);
    expect((await admin.request('POST', `${base}/payment-methods`, VISA)).statusCode).toBe(200);
    for (const [method, path, body] of [
      ['POST', 'payment-methods', MASTERCARD],
      ['DELETE', 'payment-methods', undefined],
      ['POST', 'payments', { amount: 100 }],
      ['GET', 'payments', undefined],
    ] as const) {
      const res = await member.request(method, `${base}/${path}`, body);
      expect(res.statusCode, `${method} ${path}`).toBe(403);
      expect(res.json().code).toBe('BILLING_ADMIN_REQUIRED');
    }
    for (const [method, path, body] of [
      ['GET', 'payment-methods', undefined],
      ['POST', 'payment-methods', MASTERCARD],
      ['DELETE', 'payment-methods', undefined],
      ['POST', 'payments', { amount: 100 }],
      ['GET', 'payments', undefined],
    ] as const) {
      const res = await outsider.request(method, `${base}/${path}`, body);
      expect(res.statusCode, `${method} ${path}`).toBe(403);
      expect(res.json().code).toBe('NOT_A_MEMBER');
    }
    expect((await outsider.request('GET', `${prefix}/v1/accounts/acct_nosuch/payment-methods`)).json().code).toBe('ACCOUNT_NOT_FOUND');
    // Nothing changed: still visa, no payments.
    expect((await admin.request('GET', `${base}/payment-methods`)).json().processor_payment_method_id).toBe('pm_card_visa');
    expect((await admin.request('GET', `${base}/payments`)).json()).toEqual([]);
  });

  it('refuses a narrowed credential the writes (403 CREDENTIAL_NARROWED)', async () => {
    const { admin, base } = await setup(prefix);
    const narrowed = await signIn(t.app, t.adminToken, admin.identity, { permissions: [['sales.*', 'owner']] });
    expect((await narrowed.request('GET', `${base}/payment-methods`)).statusCode).toBe(200);
    for (const [method, path, body] of [['POST', 'payment-methods', VISA], ['DELETE', 'payment-methods', undefined], ['POST', 'payments', { amount: 100 }]] as const) {
      const res = await narrowed.request(method, `${base}/${path}`, body);
      expect(res.statusCode).toBe(403);
      expect(res.json().code).toBe('CREDENTIAL_NARROWED');
    }
  });
});

describe.each(PREFIXES)('payments on %s', (prefix) => {
  it('is 400 PAYMENT_METHOD_REQUIRED with no method attached, and records nothing', async () => {
    const { admin, base } = await setup(prefix);
    const res = await pay(admin, base, { amount: 1000 });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('PAYMENT_METHOD_REQUIRED');
    expect((await admin.request('GET', `${base}/payments`)).json()).toEqual([]);
  });

  it('charges the attached method (201 only when confirmed), defaulting to usd, and lists it', async () => {
    const { admin, base, accountId } = await setup(prefix);
    await admin.request('POST', `${base}/payment-methods`, VISA);
    const before = events.length;
    const res = await pay(admin, base, { amount: 1999, description: 'April usage' });
    expect(res.statusCode, res.body).toBe(201);
    const payment = res.json();
    expect(payment).toMatchObject({ account_id: accountId, processor: 'sandbox', amount: 1999, currency: 'usd', description: 'April usage', status: 'succeeded', livemode: false, created_by: admin.identity, processor_payment_method_id: 'pm_card_visa' });
    expect(payment.processor_payment_id).toMatch(/^pi_sandbox_/);
    const jpy = await pay(admin, base, { amount: 500, currency: 'JPY' });
    expect(jpy.statusCode).toBe(201);
    expect(jpy.json().currency).toBe('jpy');
    const list = await admin.request('GET', `${base}/payments?limit=1`);
    expect(list.json().map((p: { payment_id: string }) => p.payment_id)).toEqual([jpy.json().payment_id]);
    expect((await admin.request('GET', `${base}/payments`)).json()).toHaveLength(2);
    expect(events.slice(before).map((e) => [e.type, e.payment.payment_id, e.actor])).toEqual([
      ['payment.succeeded', payment.payment_id, admin.identity],
      ['payment.succeeded', jpy.json().payment_id, admin.identity],
    ]);
  });

  it.each([
    ['pm_card_visa_chargeDeclined', '0002', 'generic_decline', 'card_declined'],
    ['pm_card_visa_chargeDeclinedInsufficientFunds', '9995', 'insufficient_funds', 'card_declined'],
    ['pm_card_authenticationRequired', '3184', 'authentication_required', 'authentication_required'],
  ])('answers 402 PAYMENT_DECLINED for %s and records the failure', async (pm, last4, declineCode, processorCode) => {
    const { admin, member, base } = await setup(prefix);
    expect((await admin.request('PATCH', `${base}/members/${member.identity}`, { role: 'billing_admin' })).statusCode).toBe(200);
    expect((await admin.request('POST', `${base}/payment-methods`, { processor_payment_method_id: pm, brand: 'visa', last4 })).statusCode).toBe(200);
    const before = events.length;
    const res = await pay(admin, base, { amount: 1000 });
    expect(res.statusCode, res.body).toBe(402);
    expect(res.json()).toMatchObject({ code: 'PAYMENT_DECLINED', decline_code: declineCode, processor_code: processorCode });
    if (declineCode === 'authentication_required') expect(res.json().detail).toMatch(/authenticate/);
    const [recorded] = (await admin.request('GET', `${base}/payments`)).json();
    expect(recorded).toMatchObject({ payment_id: res.json().payment_id, status: 'failed', decline_code: declineCode, error_code: 'PAYMENT_DECLINED', livemode: false });
    expect(events.slice(before).map((e) => e.type)).toEqual(['payment.failed']);
    // The other billing_admin's feed says so (the one who paid has the 402 and is not told again).
    const feed = (await member.request('GET', '/control/v1/notifications')).json();
    expect(feed.notifications[0]).toMatchObject({ type: 'payment.declined', actor: admin.identity, data: { payment_id: res.json().payment_id, amount: 1000, currency: 'usd' }, resource: { kind: 'payment', path: `/control/v1/accounts/${recorded.account_id}/payments` } });
    expect((await admin.request('GET', '/control/v1/notifications')).json().notifications.map((n: { type: string }) => n.type)).not.toContain('payment.declined');
  });

  it('validates amount, currency and description (422)', async () => {
    const { admin, base } = await setup(prefix);
    await admin.request('POST', `${base}/payment-methods`, VISA);
    for (const body of [{ amount: 0 }, { amount: -5 }, { amount: 1.5 }, { amount: 100_000_000 }, { amount: '100' }, {}, { amount: 100, currency: 'xyz' }, { amount: 100, currency: 'dollars' }, { amount: 105, currency: 'kwd' }, { amount: 100, description: 'x'.repeat(1001) }]) {
      const res = await pay(admin, base, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
    }
    expect((await admin.request('GET', `${base}/payments`)).json()).toEqual([]);
  });

  it('replays a retried POST with the same Idempotency-Key instead of charging twice; another body with the key is 409', async () => {
    const { admin, base } = await setup(prefix);
    await admin.request('POST', `${base}/payment-methods`, VISA);
    const first = await pay(admin, base, { amount: 700, currency: 'eur' }, 'order-42');
    expect(first.statusCode).toBe(201);
    const again = await pay(admin, base, { amount: 700, currency: 'EUR' }, 'order-42');
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    const other = await pay(admin, base, { amount: 800, currency: 'eur' }, 'order-42');
    expect(other.statusCode).toBe(409);
    expect(other.json().code).toBe('PAYMENT_IDEMPOTENCY_KEY_REUSED');
    // Without a key every POST is a new charge.
    expect((await pay(admin, base, { amount: 700, currency: 'eur' })).json().payment_id).not.toBe(first.json().payment_id);
    expect((await admin.request('GET', `${base}/payments`)).json()).toHaveLength(2);
    // A declined payment replays its 402.
    await admin.request('POST', `${base}/payment-methods`, { processor_payment_method_id: 'pm_card_visa_chargeDeclined', brand: 'visa', last4: '0002' });
    const declined = await pay(admin, base, { amount: 300 }, 'order-43');
    const replayed = await pay(admin, base, { amount: 300 }, 'order-43');
    expect([declined.statusCode, replayed.statusCode]).toEqual([402, 402]);
    expect(replayed.json()).toEqual(declined.json());
    expect((await admin.request('GET', `${base}/payments`)).json()).toHaveLength(3);
    const badKey = await pay(admin, base, { amount: 300 }, 'has space');
    expect(badKey.statusCode).toBe(422);
    expect(badKey.json().detail[0].loc).toEqual(['header', 'idempotency-key']);
  });

  it('charges once for concurrent POSTs with one Idempotency-Key', async () => {
    const { admin, base } = await setup(prefix);
    await admin.request('POST', `${base}/payment-methods`, VISA);
    const answers = await Promise.all([1, 2, 3].map(() => pay(admin, base, { amount: 4200 }, 'burst')));
    expect(answers.map((a) => a.statusCode)).toEqual([201, 201, 201]);
    expect(new Set(answers.map((a) => a.json().processor_payment_id)).size).toBe(1);
    expect((await admin.request('GET', `${base}/payments`)).json()).toHaveLength(1);
  });

  it('keeps Idempotency-Keys per account', async () => {
    const a = await setup(prefix);
    const b = await setup(prefix);
    for (const s of [a, b]) await s.admin.request('POST', `${s.base}/payment-methods`, VISA);
    const pa = await pay(a.admin, a.base, { amount: 100 }, 'shared-key');
    const pb = await pay(b.admin, b.base, { amount: 100 }, 'shared-key');
    expect([pa.statusCode, pb.statusCode]).toEqual([201, 201]);
    expect(pa.json().payment_id).not.toBe(pb.json().payment_id);
    expect(pb.headers['idempotent-replayed']).toBeUndefined();
    const res = await pay(a.outsider, a.base, { amount: 100 }, 'shared-key');
    expect(res.statusCode).toBe(403);
  });
});

describe('the payment event hook', () => {
  it('is told nothing on replays, and a hook that throws changes no answer', async () => {
    const seen: string[] = [];
    const other = await createTestApp({
      onPaymentEvent: (event) => {
        seen.push(event.type);
        throw new Error('feed is down');
      },
    });
    try {
      const admin = await signIn(other.app, other.adminToken, 'hook-admin');
      const base = `/billing/v1/accounts/${(await admin.request('POST', '/billing/v1/accounts', { name: 'Hook' })).json().account_id}`;
      await admin.request('POST', `${base}/payment-methods`, VISA);
      const req = () => other.app.inject({ method: 'POST', url: `${base}/payments`, headers: { authorization: `Bearer ${admin.token}`, 'idempotency-key': 'k1' }, payload: { amount: 100 } });
      expect((await req()).statusCode).toBe(201);
      expect((await req()).statusCode).toBe(201);
      expect(seen).toEqual(['payment.succeeded']);
    } finally {
      await other.close();
    }
  });
});
