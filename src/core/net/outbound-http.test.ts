/**
 * The guarded outbound client against a real local HTTP server: non-public addresses refused before
 * any connection (literal hosts, names resolving to them, a name with one private address among
 * public ones), the connection made to the address the check saw, one deadline, capped answers.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failure as rejection } from '../../../test/async.ts';
import { OutboundError, OutboundHttp } from './outbound-http.ts';

let server: http.Server;
let port: number;
let connections = 0;

beforeAll(async () => {
  server = http.createServer((request, response) => {
    if (request.url === '/hang') return; // never answers
    if (request.url === '/big') return void response.end('x'.repeat(4096));
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ path: request.url, method: request.method, auth: request.headers.authorization ?? null }));
  });
  server.on('connection', () => void connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A resolver answering from a table (unknown names do not resolve). */
const table = (names: Record<string, string[]>) => async (host: string) => {
  if (!names[host]) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return names[host];
};

/** The OutboundError a call rejects with. */
async function failure(promise: Promise<unknown>): Promise<OutboundError> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(OutboundError);
  return error as OutboundError;
}

describe('refusing non-public addresses', () => {
  const names = {
    'loopback.test': ['127.0.0.1'],
    'metadata.test': ['169.254.169.254'],
    'private.test': ['10.1.2.3'],
    'ula.test': ['fd12:3456::1'],
    'linklocal6.test': ['fe80::1'],
    'unspecified.test': ['0.0.0.0'],
    'mixed.test': ['93.184.216.34', '192.168.1.10'],
  };
  const guarded = new OutboundHttp({ timeoutMs: 2_000, allowPrivateNetworks: false, resolve: table(names) });

  it.each(['127.0.0.1', '[::1]', '10.0.0.8', '172.16.0.1', '192.168.0.1', '169.254.169.254', '0.0.0.0', '[::]', '[fd00::1]', '[fe80::1]', '[::ffff:127.0.0.1]'])(
    'a literal %s, before connecting',
    async (host) => {
      const before = connections;
      const error = await failure(guarded.request(`http://${host}:${port}/`));
      expect(error.kind).toBe('address_refused');
      expect(connections).toBe(before);
    },
  );

  it.each(Object.keys(names))('a name resolving to a non-public address (%s), before connecting', async (host) => {
    const before = connections;
    const error = await failure(guarded.request(`http://${host}:${port}/`));
    expect(error.kind).toBe('address_refused');
    expect(error.message).toContain(host);
    expect(connections).toBe(before);
  });

  it('the system resolver too: localhost is refused', async () => {
    const system = new OutboundHttp({ timeoutMs: 2_000, allowPrivateNetworks: false });
    expect((await failure(system.request(`http://localhost:${port}/`))).kind).toBe('address_refused');
  });
});

describe('with private networks allowed', () => {
  const open = new OutboundHttp({ timeoutMs: 300, allowPrivateNetworks: true, resolve: table({ 'catalog.test': ['127.0.0.1'] }), maxBodyBytes: 1024 });

  it('connects to the address its lookup checked (a name no DNS knows)', async () => {
    // Its own client with a generous deadline: a loaded machine can take more than 300 ms to answer.
    const patient = new OutboundHttp({ timeoutMs: 10_000, allowPrivateNetworks: true, resolve: table({ 'catalog.test': ['127.0.0.1'] }) });
    const answer = await patient.request(`http://catalog.test:${port}/v1/config?warehouse=w`, { headers: { authorization: 'Bearer t' } });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body.toString())).toEqual({ path: '/v1/config?warehouse=w', method: 'GET', auth: 'Bearer t' });
  });

  it('gives up at the deadline', async () => {
    const started = Date.now();
    const error = await failure(open.request(`http://127.0.0.1:${port}/hang`));
    expect(error.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('refuses an answer over the size cap', async () => {
    expect((await failure(open.request(`http://127.0.0.1:${port}/big`))).kind).toBe('too_large');
  });

  it('reports a closed port or an unknown name as unreachable', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect((await failure(open.request(`http://127.0.0.1:${closedPort}/`))).kind).toBe('unreachable');
    expect((await failure(open.request(`http://nowhere.test:${port}/`))).kind).toBe('unreachable');
  });

  it('refuses other schemes and URLs carrying credentials', async () => {
    expect((await failure(open.request('ftp://127.0.0.1/'))).kind).toBe('invalid_url');
    expect((await failure(open.request(`http://u:p@127.0.0.1:${port}/`))).kind).toBe('invalid_url');
    expect((await failure(open.request('not a url'))).kind).toBe('invalid_url');
  });
});
