import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake of the Stripe API calls Lakeport makes, on loopback, answering as Stripe's test mode does:
 * - `POST /v1/customers`, `GET /v1/payment_methods/:id`, `POST /v1/payment_methods/:id/attach` (a
 *   test token such as `pm_card_visa` becomes a new `pm_…` attached to the customer) and `/detach`;
 * - `POST /v1/payment_intents` with `confirm=true` and `off_session=true`: succeeded, or Stripe's 402
 *   `card_error` body (generic_decline, insufficient_funds, authentication_required) with the failed
 *   `payment_intent`; `amount_too_small` below 50 usd cents;
 * - `Idempotency-Key` on POSTs as Stripe honours it: the same key and parameters replay the first
 *   answer (`Idempotent-Replayed: true`), other parameters are a 400 `idempotency_error`;
 * - a bearer secret key; anything else is a 401. `fault` makes every request a 500 or hang.
 */
export interface FakeStripe {
  /** `http://127.0.0.1:<port>`: the adapter's `apiBase`. */
  url: string;
  secretKey: string;
  /** `500`: every request answers Stripe's api_error; `hang`: no answer at all. */
  fault: '500' | 'hang' | null;
  /** Requests seen: `POST /v1/payment_intents idem=<key>`. */
  requests: string[];
  /** PaymentIntents actually created (replays not counted). */
  intents: Array<Record<string, unknown>>;
  customers: string[];
  /** The customer a payment method is attached to (null once detached). */
  attachments: Map<string, string | null>;
  stop(): Promise<void>;
}

const TEST_CARDS: Record<string, { brand: string; last4: string; outcome: 'succeeds' | 'generic_decline' | 'insufficient_funds' | 'authentication_required' }> = {
  pm_card_visa: { brand: 'visa', last4: '4242', outcome: 'succeeds' },
  pm_card_mastercard: { brand: 'mastercard', last4: '4444', outcome: 'succeeds' },
  pm_card_visa_chargeDeclined: { brand: 'visa', last4: '0002', outcome: 'generic_decline' },
  pm_card_visa_chargeDeclinedInsufficientFunds: { brand: 'visa', last4: '9995', outcome: 'insufficient_funds' },
  pm_card_authenticationRequired: { brand: 'visa', last4: '3184', outcome: 'authentication_required' },
};

const id = (prefix: string) => `${prefix}_${crypto.randomBytes(12).toString('hex')}`;

interface Answer {
  status: number;
  body: unknown;
}

export async function startFakeStripe(): Promise<FakeStripe> {
  const secretKey = `sk_test_${crypto.randomBytes(16).toString('hex')}`;
  /** Payment methods by id: the test card each stands for, and its customer. */
  const methods = new Map<string, { card: string; customer: string | null }>(Object.keys(TEST_CARDS).map((k) => [k, { card: k, customer: null }]));
  const idempotent = new Map<string, { params: string; answer: Answer }>();
  const sockets = new Set<import('node:net').Socket>();

  const pmObject = (pmId: string) => {
    const m = methods.get(pmId)!;
    const card = TEST_CARDS[m.card];
    return { id: pmId, object: 'payment_method', type: 'card', customer: m.customer, livemode: false, card: { brand: card.brand, last4: card.last4, exp_month: 12, exp_year: 2034 } };
  };
  const invalid = (message: string, extra: Record<string, unknown> = {}, status = 400): Answer => ({ status, body: { error: { type: 'invalid_request_error', message, ...extra } } });

  const route = (method: string, path: string, params: URLSearchParams): Answer => {
    if (method === 'POST' && path === '/v1/customers') {
      const customer = id('cus');
      fake.customers.push(customer);
      return { status: 200, body: { id: customer, object: 'customer', livemode: false, metadata: { lakeport_account_id: params.get('metadata[lakeport_account_id]') } } };
    }
    const pm = /^\/v1\/payment_methods\/([^/]+)(\/attach|\/detach)?$/.exec(path);
    if (pm) {
      const [, pmId, action] = pm;
      if (!methods.has(pmId)) return invalid(`No such PaymentMethod: '${pmId}'`, { code: 'resource_missing', param: 'payment_method' }, 404);
      if (method === 'GET' && !action) return { status: 200, body: pmObject(pmId) };
      if (method === 'POST' && action === '/attach') {
        const customer = params.get('customer') ?? '';
        if (!fake.customers.includes(customer)) return invalid(`No such customer: '${customer}'`, { code: 'resource_missing', param: 'customer' }, 404);
        const current = methods.get(pmId)!.customer;
        if (current !== null && current !== customer) return invalid('The payment method you provided has already been attached to a customer.');
        // A test token attaches as a new PaymentMethod, as in Stripe's test mode.
        const attached = pmId in TEST_CARDS ? id('pm') : pmId;
        methods.set(attached, { card: methods.get(pmId)!.card, customer });
        fake.attachments.set(attached, customer);
        return { status: 200, body: pmObject(attached) };
      }
      if (method === 'POST' && action === '/detach') {
        const m = methods.get(pmId)!;
        if (m.customer === null) return invalid('The payment method you provided is not attached to a customer so detachment is impossible.');
        m.customer = null;
        fake.attachments.set(pmId, null);
        return { status: 200, body: pmObject(pmId) };
      }
    }
    if (method === 'POST' && path === '/v1/payment_intents') {
      const pmId = params.get('payment_method') ?? '';
      const m = methods.get(pmId);
      if (!m) return invalid(`No such PaymentMethod: '${pmId}'`, { code: 'resource_missing', param: 'payment_method' }, 404);
      if (m.customer === null || m.customer !== params.get('customer')) {
        return invalid('The provided PaymentMethod was previously used or is not attached to this Customer.', { code: 'payment_method_not_attached' });
      }
      if (params.get('confirm') !== 'true' || params.get('off_session') !== 'true') return invalid('Lakeport always confirms off-session', { param: 'confirm' });
      const amount = Number(params.get('amount'));
      const currency = params.get('currency') ?? '';
      if (currency === 'usd' && amount < 50) return invalid('Amount must be at least $0.50 usd', { code: 'amount_too_small', param: 'amount' });
      const intent = { id: id('pi'), object: 'payment_intent', amount, currency, customer: m.customer, payment_method: pmId, description: params.get('description'), livemode: false, status: 'succeeded', latest_charge: id('ch') };
      fake.intents.push(intent);
      const outcome = TEST_CARDS[m.card].outcome;
      if (outcome === 'succeeds') return { status: 200, body: intent };
      const code = outcome === 'authentication_required' ? 'authentication_required' : 'card_declined';
      const message =
        outcome === 'insufficient_funds' ? 'Your card has insufficient funds.' : outcome === 'authentication_required' ? 'Your card was declined. This transaction requires authentication.' : 'Your card was declined.';
      const error = { type: 'card_error', code, decline_code: outcome, message, charge: intent.latest_charge, doc_url: `https://stripe.com/docs/error-codes/${code}` };
      return { status: 402, body: { error: { ...error, payment_intent: { ...intent, status: 'requires_payment_method', last_payment_error: error }, payment_method: pmObject(pmId) } } };
    }
    return invalid(`Unrecognized request URL (${method}: ${path})`, {}, 404);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://stripe.test');
      const body = Buffer.concat(chunks).toString();
      const key = req.headers['idempotency-key'] as string | undefined;
      fake.requests.push(`${req.method} ${url.pathname}${key ? ` idem=${key}` : ''}`);
      if (fake.fault === 'hang') return;
      const send = (answer: Answer, replayed = false) => {
        res.writeHead(answer.status, { 'content-type': 'application/json', 'request-id': id('req'), ...(replayed ? { 'idempotent-replayed': 'true' } : {}) });
        res.end(JSON.stringify(answer.body));
      };
      if (fake.fault === '500') return send({ status: 500, body: { error: { type: 'api_error', message: 'An unknown error occurred' } } });
      if (req.headers.authorization !== `Bearer ${secretKey}`) {
        return send({ status: 401, body: { error: { type: 'invalid_request_error', message: `Invalid API Key provided: sk_test_****${String(req.headers.authorization).slice(-4)}` } } });
      }
      const params = new URLSearchParams(req.method === 'GET' ? url.search : body);
      if (req.method === 'POST' && key) {
        const seen = idempotent.get(key);
        if (seen) {
          if (seen.params !== body) {
            return send({ status: 400, body: { error: { type: 'idempotency_error', message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.` } } });
          }
          return send(seen.answer, true);
        }
        const answer = route(req.method, url.pathname, params);
        idempotent.set(key, { params: body, answer });
        return send(answer);
      }
      send(route(req.method ?? 'GET', url.pathname, params));
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const fake: FakeStripe = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    secretKey,
    fault: null,
    requests: [],
    intents: [],
    customers: [],
    attachments: new Map(),
    stop: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}
