import { it } from 'vitest';
import { createWorkspace, signIn } from '../test/clients.ts';
import { createTestApp } from '../test/harness.ts';

it('probe', async () => {
  const t = await createTestApp({}, { workers: false });
  const alice = await signIn(t.app, t.adminToken, 'alice');
  await createWorkspace(alice, 'sales');
  const routes: [string, string][] = [];
  for (const prefix of ['/auth', '/upload', '/jobs', '/billing', '/control', '/policy', '/odata']) {
    const doc = (await t.app.inject({ method: 'GET', url: `${prefix}/openapi.json` })).json();
    for (const [p, ops] of Object.entries(doc.paths ?? {})) for (const m of Object.keys(ops as object)) routes.push([m.toUpperCase(), p]);
  }
  console.log('routes', routes.length);
  const N = 'a\u0000b';
  const hits: string[] = [];
  const deep = '['.repeat(100000) + ']'.repeat(100000);
  const deepObj = '{"a":'.repeat(5000) + '1' + '}'.repeat(5000);
  for (const [method, p] of routes) {
    const url = p.replace(/\{[^}]+\}/g, encodeURIComponent(N));
    const plain = p.replace(/\{[^}]+\}/g, 'sales');
    const tries: [string, any][] = [
      ['path', { method, url, headers: { authorization: `Bearer ${alice.token}` } }],
      ['query', { method, url: `${plain}?filter=${encodeURIComponent(N)}&x=${encodeURIComponent(N)}&num_rows=${encodeURIComponent(N)}&$filter=${encodeURIComponent(N)}`, headers: { authorization: `Bearer ${alice.token}` } }],
    ];
    if (!['GET', 'DELETE', 'HEAD'].includes(method)) {
      const body = { name: N, sql_text: N, identity: N, client_id: N, type: N, principal: { identity: N }, pattern: N, role: N, billing_account: N, members: [{ identity: N, role: 'owner' }], contract: { destination: { workspace: N, collection: N, dataset: N } }, message: N, value: N, parameters: { [N]: N } };
      tries.push(['body', { method, url: plain, headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' }, payload: JSON.stringify(body) }]);
      tries.push(['deep', { method, url: plain, headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' }, payload: deep }]);
      tries.push(['deepobj', { method, url: plain, headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' }, payload: deepObj }]);
      tries.push(['form', { method, url: plain, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `grant_type=client_credentials&client_id=${encodeURIComponent(N)}&client_secret=x` }]);
      tries.push(['formjson', { method, url: plain, headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ grant_type: 'client_credentials', client_id: N, client_secret: 'x' }) }]);
    }
    tries.push(['basic', { method, url: plain, headers: { authorization: `Basic ${Buffer.from(`${N}:x`).toString('base64')}` } }]);
    for (const [label, req] of tries) {
      const res = await t.app.inject(req);
      if (res.statusCode >= 500) hits.push(`${res.statusCode} ${label} ${method} ${p} ${res.body.slice(0, 100)}`);
    }
  }
  console.log(hits.join('\n'));
  await t.close();
}, 300000);
