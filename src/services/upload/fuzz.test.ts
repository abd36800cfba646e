import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, signIn, type TestUser } from '../../../test/clients.ts';
import { createTestApp, type TestApp } from '../../../test/harness.ts';
import { multipartBody } from '../../../test/multipart.ts';
import { deepJson, expectRefused, jsonWithNul, poison, withNul } from '../../../test/fuzz.ts';

let t: TestApp;
let alice: TestUser;
let contractId: string;

beforeAll(async () => {
  t = await createTestApp({}, { workers: false });
  alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'sales');
  const body = await multipartBody({ contract: { destination: 'sales.a.b', schema: { mode: 'declared', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'name', type: 'VARCHAR' }] } }, samples: [{ name: 'f.csv', content: 'id,name\n1,a\n' }] });
  const res = await t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${alice.token}` }, payload: body.payload });
  // Without the contract every fuzzer below would only meet 404s.
  expect(res.statusCode, res.body).toBe(201);
  contractId = res.json().contract_id;
  expect(contractId).toEqual(expect.any(String));
  const contract = await alice.request('GET', `/upload/v2/contracts/${contractId}`);
  expect(contract.statusCode, contract.body).toBe(200);
  expect(contract.json()).toMatchObject({ contract_id: contractId });
});
afterAll(async () => t.close());

type Res = { statusCode: number; body: string };
const noServerError = (res: Res) => expect(res.statusCode, res.body).toBeLessThan(500);

/**
 * The answers a fuzzer got, as `status code` (e.g. `409 CONTRACT_NOT_ACCEPTED`), to prove it reached the
 * real handler rather than only a 404 (or an auth refusal) in front of it.
 */
function answers() {
  const seen = new Set<string>();
  return {
    seen,
    note(res: Res): Res {
      let code = '';
      try {
        code = String(JSON.parse(res.body)?.code ?? '');
      } catch {
        // not JSON: the status alone
      }
      seen.add(`${res.statusCode} ${code}`.trim());
      return res;
    },
  };
}

describe('fuzzing uploads never yields a 5xx', () => {
  it('negotiation with arbitrary contracts and samples', async () => {
    const { seen, note } = answers();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.jsonValue(), fc.string({ maxLength: 200 }), fc.record({ destination: fc.string({ maxLength: 40 }), schema: fc.jsonValue(), format: fc.jsonValue() }, { requiredKeys: [] })),
        fc.array(fc.record({ name: fc.string({ minLength: 1, maxLength: 20 }), content: fc.oneof(fc.string({ maxLength: 300 }), fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a))) }), { maxLength: 3 }),
        async (contract, samples) => {
          const body = await multipartBody({ contract, samples });
          noServerError(note(await t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${alice.token}` }, payload: body.payload })));
        },
      ),
      { numRuns: 150 },
    );
    // The handler itself parses the multipart contract: its 422s prove the route was reached.
    expect([...seen]).toContain('422');
  });

  it('well-formed contracts over arbitrary CSV and JSONL samples', async () => {
    const { seen, note } = answers();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('s.csv', 's.jsonl', 's.parquet', 's.tsv'), fc.string({ maxLength: 400 }), fc.constantFrom('auto', 'infer', 'declared'), async (name, content, mode) => {
        const body = await multipartBody({ contract: { destination: 'sales.fuzz.x', schema: { mode, columns: [{ name: 'a', type: 'INTEGER' }] } }, samples: [{ name, content }] });
        noServerError(note(await t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${alice.token}` }, payload: body.payload })));
      }),
      { numRuns: 150 },
    );
    // At least one contract was negotiated: the workspace exists and the real negotiation ran.
    expect([...seen]).toContain('201');
  });

  it('writes of arbitrary bytes', async () => {
    const { seen, note } = answers();
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ maxLength: 500 }), fc.uint8Array({ maxLength: 500 }).map((a) => Buffer.from(a))), fc.constantFrom('text/csv', 'application/octet-stream', 'application/json', undefined), async (content, type) => {
        const headers: Record<string, string> = { authorization: `Bearer ${alice.token}`, 'x-file-name': 'f.csv' };
        if (type) headers['content-type'] = type;
        noServerError(note(await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${contractId}/data`, headers, payload: content })));
      }),
      { numRuns: 150 },
    );
    // The writes met the fixture contract (a 2xx, or a 409 only the service answers after finding it), not only 404s.
    expect([...seen].filter((a) => /^(2\d\d|409 (?!CONTRACT_NOT_FOUND))/.test(a)), [...seen].join(', ')).not.toHaveLength(0);
  });

  it('a file sent as application/json is a file, not a JSON body', async () => {
    for (const content of ['0', '{"id": 1}', '[1,2]']) {
      const res = await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${contractId}/data`, headers: { authorization: `Bearer ${alice.token}`, 'x-file-name': 'f.csv', 'content-type': 'application/json' }, payload: content });
      noServerError(res);
    }
  });

  it('PATCH and accept with arbitrary JSON', async () => {
    const patched = answers();
    const accepted = answers();
    await fc.assert(
      // Arbitrary JSON, and bodies of the right shape so that some get past validation into the handler.
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue(),
          fc.record({ schema_fingerprint: fc.string({ minLength: 1, maxLength: 80 }) }),
          fc.record({ columns: fc.dictionary(fc.oneof(fc.constantFrom('id', 'name'), fc.string({ minLength: 1, maxLength: 20 })), fc.record({ type: fc.oneof(fc.constantFrom('BIGINT', 'VARCHAR', 'DOUBLE'), fc.string({ minLength: 1, maxLength: 64 })), ignore: fc.boolean() }, { requiredKeys: [] }), { maxKeys: 3 }) }),
        ),
        async (body) => {
        noServerError(patched.note(await alice.request('PATCH', `/upload/v2/contracts/${contractId}`, body)));
        noServerError(accepted.note(await alice.request('PUT', `/upload/v2/contracts/${contractId}/accept`, body)));
        },
      ),
      { numRuns: 150 },
    );
    // Past validation, the handlers found the fixture contract: a PATCH re-planned it (or was refused
    // by the service), and an accept with a made-up fingerprint was refused as a mismatch.
    const reached = (seen: Set<string>) => [...seen].filter((a) => /^(2\d\d|409 (?!CONTRACT_NOT_FOUND))/.test(a));
    expect(reached(patched.seen), [...patched.seen].join(', ')).not.toHaveLength(0);
    expect([...accepted.seen]).toContain('409 FINGERPRINT_MISMATCH');
  });
});

describe('NUL characters and deep nesting reach the upload service only as 4xx', () => {
  const contract = { destination: 'sales.fuzz.nul', schema: { mode: 'declared', columns: [{ name: 'id', type: 'BIGINT' }] }, format: { delimiter: ',', null_string: 'NA' } };

  it('negotiation with a NUL in any string of the contract, in a sample name, or a deeply nested contract', async () => {
    const parts = fc.oneof(
      fc.nat().map((i) => ({ contract: poison(contract, i), samples: [{ name: 'f.csv', content: 'id\n1\n' }] })),
      // (the multipart parser keeps only what follows the last / or \ of a file name)
      withNul.filter((name) => !/[\\/]/.test(name.slice(name.indexOf('\u0000')))).map((name) => ({ contract, samples: [{ name, content: 'id\n1\n' }] })),
      deepJson.map((text) => ({ contract: text, samples: [{ name: 'f.csv', content: 'id\n1\n' }] })),
    );
    await fc.assert(
      fc.asyncProperty(parts, async (p) => {
        const body = await multipartBody(p);
        expectRefused(await t.app.inject({ method: 'POST', url: '/upload/v2/contracts', headers: { ...body.headers, authorization: `Bearer ${alice.token}` }, payload: body.payload }));
      }),
      { numRuns: 100 },
    );
  });

  it('a NUL in a contract id, a file name header or an idempotency key; NULs and deep nesting in JSON bodies', async () => {
    await fc.assert(
      fc.asyncProperty(withNul, fc.oneof(jsonWithNul.map((v) => JSON.stringify(v)), deepJson), async (value, payload) => {
        const auth = { authorization: `Bearer ${alice.token}` };
        const id = encodeURIComponent(value);
        for (const [method, url] of [['GET', `/upload/v2/contracts/${id}`], ['DELETE', `/upload/v2/contracts/${id}`], ['POST', `/upload/v2/contracts/${id}/commit`], ['POST', `/upload/v2/contracts/${id}/data`]] as const) {
          expectRefused(await t.app.inject({ method, url, headers: auth }));
        }
        expectRefused(await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${contractId}/data`, headers: { ...auth, 'x-file-name': value }, payload: 'id,name\n1,a\n' }));
        expectRefused(await t.app.inject({ method: 'POST', url: `/upload/v2/contracts/${contractId}/commit`, headers: { ...auth, 'idempotency-key': value } }));
        for (const url of [`/upload/v2/contracts/${contractId}`, `/upload/v2/contracts/${contractId}/accept`]) {
          expectRefused(await t.app.inject({ method: url.endsWith('accept') ? 'PUT' : 'PATCH', url, headers: { ...auth, 'content-type': 'application/json' }, payload }));
        }
      }),
      { numRuns: 60 },
    );
  });
});
