/** The TXT lookup against a real DNS server on loopback: answers, absences and failures are told apart. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type TestDnsServer } from '../../../test/dns-server.ts';
import { dnsTxtResolver, type TxtResolver } from './dns-txt.ts';

let server: TestDnsServer;
let resolve: TxtResolver;

beforeAll(async () => {
  server = await startDnsServer();
  resolve = dnsTxtResolver({ servers: [server.address], timeoutMs: 200, tries: 1 });
});
afterAll(async () => server.stop());

describe('dnsTxtResolver', () => {
  it('joins the character-strings of each record (RFC 7208 §3.3) and keeps records apart', async () => {
    server.set('_x.split.test', { txt: [['lakeport-domain-verification=', 'abc', 'def'], ['v=spf1 -all']] });
    expect(await resolve('_x.split.test')).toEqual({ kind: 'found', records: ['lakeport-domain-verification=abcdef', 'v=spf1 -all'] });
    expect(server.queries).toContain('_x.split.test');
  });

  it('reports NXDOMAIN and NODATA as an absent record', async () => {
    server.set('_x.empty.test', 'nodata');
    expect(await resolve('_x.nowhere.test')).toEqual({ kind: 'absent', code: 'ENOTFOUND' });
    expect(await resolve('_x.empty.test')).toEqual({ kind: 'absent', code: 'ENODATA' });
  });

  it('reports timeouts, SERVFAIL and REFUSED as a failed lookup', async () => {
    server.set('_x.slow.test', 'timeout');
    server.set('_x.broken.test', 'servfail');
    server.set('_x.refused.test', 'refused');
    expect(await resolve('_x.slow.test')).toMatchObject({ kind: 'failed', code: 'ETIMEOUT' });
    expect(await resolve('_x.broken.test')).toMatchObject({ kind: 'failed', code: 'ESERVFAIL' });
    expect(await resolve('_x.refused.test')).toMatchObject({ kind: 'failed', code: 'EREFUSED' });
  });
});
