/**
 * The Stripe adapter end to end through the real `stripe` SDK against a local server that answers as
 * Stripe's API does (test/stripe-server.ts): directly, and behind the HTTP API on both prefixes.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { startFakeStripe, type FakeStripe } from '../../../test/stripe-server.ts';
import { createPaymentProcessor } from './payment-config.ts';
import { ProcessorError } from './payment-processor.ts';
import { StripeProcessor } from './stripe-processor.ts';

let fake: FakeStripe;
beforeAll(async () => {
  fake = await startFakeStripe();
});
afterAll(async () => fake.stop());
beforeEach(() => {
  fake.fault = null;
});

const processor = (options: { timeoutMs?: number; maxNetworkRetries?: number; secretKey?: string } = {}) =>
  new StripeProcessor({ secretKey: options.secretKey ?? fake.secretKey, apiBase: fake.url, timeoutMs: options.timeoutMs ?? 5000, maxNetworkRetries: options.maxNetworkRetries ?? 0 });

async function failure(promise: Promise<unknown>): Promise<ProcessorError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProcessorError);
  return error as ProcessorError;
}

const charge = (customerId: string, paymentMethodId: string, idempotencyKey: string, amount = 1000) => ({
  customerId,
  paymentMethodId,
  amount,
  currency: 'usd',
  description: 'test',
  idempotencyKey,
  metadata: { lakeport_account_id: 'acct_x' },
});

describe('StripeProcessor through the stripe SDK', () => {
  it('retrieves a payment method to verify it, and rejects an unknown one with Stripe’s reason', async () => {
    const p = processor();
    expect(await p.retrievePaymentMethod('pm_card_visa')).toEqual({ id: 'pm_card_visa', brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2034, livemode: false, customer: null });
    const e = await failure(p.retrievePaymentMethod('pm_nope'));
    expect(e.failure).toBe('rejected');
    expect(e.details.code).toBe('resource_missing');
    expect(e.message).toContain("No such PaymentMethod: 'pm_nope'");
  });

  it('creates one customer per idempotency key, attaches and detaches (detaching twice is fine)', async () => {
    const p = processor();
    const c1 = await p.createCustomer('acct_a', 'lakeport-customer:acct_a');
    expect(await p.createCustomer('acct_a', 'lakeport-customer:acct_a')).toBe(c1);
    expect(fake.customers.filter((c) => c === c1)).toHaveLength(1);
    const attached = await p.attachPaymentMethod('pm_card_visa', c1);
    expect(attached.id).toMatch(/^pm_[0-9a-f]+$/);
    expect(fake.attachments.get(attached.id)).toBe(c1);
    await p.detachPaymentMethod(attached.id);
    expect(fake.attachments.get(attached.id)).toBeNull();
    await p.detachPaymentMethod(attached.id);
    await p.detachPaymentMethod('pm_unknown');
  });

  it('charges with a PaymentIntent confirmed off-session; declines are Stripe’s 402 card errors', async () => {
    const p = processor();
    const customer = await p.createCustomer('acct_b', 'cust-b');
    const visa = await p.attachPaymentMethod('pm_card_visa', customer);
    const ok = await p.charge(charge(customer, visa.id, 'k-ok'));
    expect(ok).toMatchObject({ status: 'succeeded', amount: 1000, currency: 'usd', livemode: false });
    expect(ok.id).toMatch(/^pi_/);
    for (const [card, decline, code] of [
      ['pm_card_visa_chargeDeclined', 'generic_decline', 'card_declined'],
      ['pm_card_visa_chargeDeclinedInsufficientFunds', 'insufficient_funds', 'card_declined'],
      ['pm_card_authenticationRequired', 'authentication_required', 'authentication_required'],
    ]) {
      const pm = await p.attachPaymentMethod(card, customer);
      const e = await failure(p.charge(charge(customer, pm.id, `k-${card}`)));
      expect(e.failure).toBe('declined');
      expect(e.details).toMatchObject({ code, declineCode: decline, status: 'requires_payment_method', livemode: false });
      expect(e.details.paymentId).toMatch(/^pi_/);
    }
    const small = await failure(p.charge(charge(customer, visa.id, 'k-small', 10)));
    expect(small.failure).toBe('invalid');
    expect(small.details.code).toBe('amount_too_small');
  });

  it('replays a charge under the same Idempotency-Key (one PaymentIntent); other parameters under it are refused', async () => {
    const p = processor();
    const customer = await p.createCustomer('acct_c', 'cust-c');
    const visa = await p.attachPaymentMethod('pm_card_visa', customer);
    const before = fake.intents.length;
    const first = await p.charge(charge(customer, visa.id, 'k-replay'));
    const again = await p.charge(charge(customer, visa.id, 'k-replay'));
    expect(again.id).toBe(first.id);
    expect(fake.intents.length).toBe(before + 1);
    expect(fake.requests.filter((r) => r === 'POST /v1/payment_intents idem=k-replay')).toHaveLength(2);
    const e = await failure(p.charge(charge(customer, visa.id, 'k-replay', 2000)));
    expect(e.failure).toBe('idempotency');
  });

  it('is unavailable on Stripe’s 5xx (the SDK’s retry carries the same key), and times out on a hang', async () => {
    const p = processor({ maxNetworkRetries: 1 });
    const customer = await p.createCustomer('acct_d', 'cust-d');
    const visa = await p.attachPaymentMethod('pm_card_visa', customer);
    fake.fault = '500';
    const seen = fake.requests.length;
    const e = await failure(p.charge(charge(customer, visa.id, 'k-5xx')));
    expect(e.failure).toBe('unavailable');
    expect(fake.requests.slice(seen)).toEqual(['POST /v1/payment_intents idem=k-5xx', 'POST /v1/payment_intents idem=k-5xx']);
    fake.fault = 'hang';
    const started = Date.now();
    const timeout = await failure(processor({ timeoutMs: 300 }).charge(charge(customer, visa.id, 'k-hang')));
    expect(timeout.failure).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('reports a refused secret key as unavailable without repeating the key', async () => {
    const wrong = 'sk_test_wrongwrongwrong1234';
    const e = await failure(processor({ secretKey: wrong }).retrievePaymentMethod('pm_card_visa'));
    expect(e.failure).toBe('unavailable');
    expect(e.message).not.toContain('1234');
    expect(e.message).toContain('LAKEPORT_STRIPE_SECRET_KEY');
  });

  it('is what LAKEPORT_PAYMENTS_PROCESSOR=stripe configures', async () => {
    const p = createPaymentProcessor({ processor: 'stripe', stripe: { secretKey: fake.secretKey, apiBase: fake.url, timeoutMs: 5000 } });
    expect(p.name).toBe('stripe');
    expect((await p.retrievePaymentMethod('pm_card_mastercard')).last4).toBe('4444');
    expect(createPaymentProcessor({ processor: 'sandbox', stripe: { secretKey: undefined, apiBase: 'https://api.stripe.com', timeoutMs: 1 } }).name).toBe('sandbox');
    expect(() => createPaymentProcessor({ processor: 'stripe', stripe: { secretKey: undefined, apiBase: fake.url, timeoutMs: 1 } })).toThrow(/LAKEPORT_STRIPE_SECRET_KEY/);
  });
});

describe('the payment API with the Stripe processor', () => {
  let t: TestApp;
  const logLines: string[] = [];
  beforeAll(async () => {
    const stream = new Writable({
      write(chunk, _enc, done) {
        logLines.push(String(chunk));
        done();
      },
    });
    t = await createTestApp({ payments: processor({ timeoutMs: 400 }) }, { logger: { level: 'trace', stream } });
  });
  afterAll(async () => t.close());

  let seq = 0;
  async function account(prefix: string) {
    const admin = await signIn(t.app, t.adminToken, `stripe-admin-${++seq}`);
    const created = await admin.request('POST', `${prefix}/v1/accounts`, { name: 'Stripe Co' });
    expect(created.statusCode).toBe(201);
    return { admin, base: `${prefix}/v1/accounts/${created.json().account_id}` };
  }
  const pay = (user: TestUser, base: string, body: object, key?: string) =>
    t.app.inject({ method: 'POST', url: `${base}/payments`, headers: { authorization: `Bearer ${user.token}`, ...(key ? { 'idempotency-key': key } : {}) }, payload: body });

  it.each(['/billing', '/control'])('attaches (customer made once), replaces (old one detached at Stripe), pays, declines and detaches on %s', async (prefix) => {
    const { admin, base } = await account(prefix);
    const customers = fake.customers.length;
    const visa = await admin.request('POST', `${base}/payment-methods`, { processor_payment_method_id: 'pm_card_visa', brand: 'Visa', last4: '4242' });
    expect(visa.statusCode, visa.body).toBe(200);
    expect(visa.json()).toMatchObject({ processor: 'stripe', brand: 'visa', last4: '4242', livemode: false });
    const visaId = visa.json().processor_payment_method_id as string;
    expect(fake.attachments.get(visaId)).toMatch(/^cus_/);
    const customer = fake.attachments.get(visaId);

    const ok = await pay(admin, base, { amount: 2500, description: 'Invoice 7' });
    expect(ok.statusCode, ok.body).toBe(201);
    expect(ok.json()).toMatchObject({ status: 'succeeded', processor: 'stripe', amount: 2500, currency: 'usd', livemode: false });
    expect(fake.intents.find((i) => i.id === ok.json().processor_payment_id)).toMatchObject({ amount: 2500, customer, payment_method: visaId });

    const declined = await admin.request('POST', `${base}/payment-methods`, { processor_payment_method_id: 'pm_card_visa_chargeDeclinedInsufficientFunds', brand: 'visa', last4: '9995' });
    expect(declined.statusCode).toBe(200);
    expect(fake.attachments.get(visaId)).toBeNull();
    expect(fake.customers.length).toBe(customers + 1);
    const refused = await pay(admin, base, { amount: 2500 });
    expect(refused.statusCode).toBe(402);
    expect(refused.json()).toMatchObject({ code: 'PAYMENT_DECLINED', decline_code: 'insufficient_funds', processor_code: 'card_declined' });
    expect(refused.json().detail).toContain('Your card has insufficient funds.');

    const small = await pay(admin, base, { amount: 10 });
    expect(small.statusCode).toBe(400);
    expect(small.json()).toMatchObject({ code: 'PAYMENT_REJECTED', processor_code: 'amount_too_small' });

    const unknown = await admin.request('POST', `${base}/payment-methods`, { processor_payment_method_id: 'pm_forged', brand: 'visa', last4: '4242' });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().code).toBe('PAYMENT_METHOD_REJECTED');

    const current = declined.json().processor_payment_method_id as string;
    expect((await admin.request('DELETE', `${base}/payment-methods`)).statusCode).toBe(204);
    expect(fake.attachments.get(current)).toBeNull();
    expect((await admin.request('GET', `${base}/payment-methods`)).body).toBe('null');
  });

  it("refuses to take over another account's attached payment method", async () => {
    const a = await account('/billing');
    const b = await account('/control');
    const attached = await a.admin.request('POST', `${a.base}/payment-methods`, { processor_payment_method_id: 'pm_card_visa', brand: 'visa', last4: '4242' });
    const pmId = attached.json().processor_payment_method_id as string;
    const owner = fake.attachments.get(pmId);
    const stolen = await b.admin.request('POST', `${b.base}/payment-methods`, { processor_payment_method_id: pmId, brand: 'visa', last4: '4242' });
    expect(stolen.statusCode).toBe(400);
    expect(stolen.json()).toMatchObject({ code: 'PAYMENT_METHOD_REJECTED', processor_code: 'payment_method_attached_elsewhere' });
    expect(fake.attachments.get(pmId)).toBe(owner);
    expect((await b.admin.request('GET', `${b.base}/payment-methods`)).body).toBe('null');
    // Re-attaching its own method is fine for A.
    expect((await a.admin.request('POST', `${a.base}/payment-methods`, { processor_payment_method_id: pmId, brand: 'visa', last4: '4242' })).statusCode).toBe(200);
    expect(fake.attachments.get(pmId)).toBe(owner);
  });

  it('answers 502 when Stripe fails and 504 when it hangs, never a success; a retry with the key then charges once', async () => {
    const { admin, base } = await account('/billing');
    expect((await admin.request('POST', `${base}/payment-methods`, { processor_payment_method_id: 'pm_card_visa', brand: 'visa', last4: '4242' })).statusCode).toBe(200);
    fake.fault = '500';
    const down = await pay(admin, base, { amount: 900 }, 'retry-me');
    expect(down.statusCode).toBe(502);
    expect(down.json().code).toBe('PROCESSOR_UNAVAILABLE');
    fake.fault = 'hang';
    const hung = await pay(admin, base, { amount: 900 }, 'retry-me');
    expect(hung.statusCode).toBe(504);
    expect(hung.json().code).toBe('PROCESSOR_TIMEOUT');
    expect(hung.json().payment_id).toBe(down.json().payment_id);
    expect((await admin.request('GET', `${base}/payments`)).json()).toMatchObject([{ payment_id: down.json().payment_id, status: 'pending' }]);
    fake.fault = null;
    const intents = fake.intents.length;
    const ok = await pay(admin, base, { amount: 900 }, 'retry-me');
    expect(ok.statusCode, ok.body).toBe(201);
    expect(ok.json()).toMatchObject({ payment_id: down.json().payment_id, status: 'succeeded' });
    const replay = await pay(admin, base, { amount: 900 }, 'retry-me');
    expect(replay.json()).toEqual(ok.json());
    expect(fake.intents.length).toBe(intents + 1);
    const keyed = fake.requests.filter((r) => r.startsWith('POST /v1/payment_intents idem=lakeport:') && r.endsWith(':retry-me'));
    expect(new Set(keyed).size).toBe(1);
  });

  it('never puts the secret key in an answer or a log line', async () => {
    expect(logLines.length).toBeGreaterThan(0);
    for (const line of logLines) expect(line).not.toContain(fake.secretKey);
  });
});
