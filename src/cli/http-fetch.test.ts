// httpFetch answers like fetch() for the requests the query command makes, against a real HTTP server.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpFetch } from './http-fetch.ts';

let server: http.Server;
let base: string;

beforeAll(async () => {
  server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      if (request.url === '/echo') {
        response.writeHead(201, { 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'] });
        response.end(JSON.stringify({ method: request.method, auth: request.headers.authorization, body: Buffer.concat(chunks).toString() }));
      } else if (request.url === '/empty') {
        response.writeHead(204).end();
      } else if (request.url === '/moved') {
        response.writeHead(307, { location: '/echo' }).end();
      } else if (request.url === '/big') {
        response.writeHead(200, { 'content-type': 'text/plain' });
        for (let i = 0; i < 1000; i++) response.write(`${'x'.repeat(999)}\n`);
        response.end();
      } else response.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"not found","code":"NOT_FOUND"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('httpFetch', () => {
  it('sends the method, headers and string body, and answers with status, headers and body', async () => {
    const response = await httpFetch(`${base}/echo`, { method: 'POST', headers: { authorization: 'Bearer t', 'content-type': 'application/json' }, body: '{"a":1}' });
    expect(response.status).toBe(201);
    expect(response.ok).toBe(true);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await response.json()).toEqual({ method: 'POST', auth: 'Bearer t', body: '{"a":1}' });
  });

  it('answers an error status as fetch does (not ok, body readable)', async () => {
    const response = await httpFetch(`${base}/nothing`);
    expect(response.status).toBe(404);
    expect(response.ok).toBe(false);
    expect(await response.json()).toEqual({ detail: 'not found', code: 'NOT_FOUND' });
  });

  it('a 204 has no body; a redirect is followed (by fetch)', async () => {
    const empty = await httpFetch(`${base}/empty`, { method: 'DELETE' });
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
    const moved = await httpFetch(`${base}/moved`, { method: 'POST', body: 'again' });
    expect(moved.status).toBe(201);
    expect(await moved.json()).toMatchObject({ method: 'POST', body: 'again' });
  });

  it('streams a large body whole', async () => {
    const text = await (await httpFetch(`${base}/big`)).text();
    expect(text.length).toBe(1_000_000);
  });

  it('a refused connection rejects like fetch: "fetch failed" with the reason as its cause', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const error = await httpFetch(`http://127.0.0.1:${port}/`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toBe('fetch failed');
    expect(((error as Error).cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
  });
});
