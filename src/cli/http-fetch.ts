import http from 'node:http';
import { Readable } from 'node:stream';

const NULL_BODY = new Set([204, 205, 304]);

/**
 * `fetch()` over node:http, for a short-lived command: a process's first `fetch()` costs about
 * 100 ms of CPU (undici's dispatcher and its WebAssembly HTTP parser), node:http a few. Covers the
 * requests the query command makes (a string body or none, plain-object headers); anything else,
 * and any redirect, goes to `fetch()` itself.
 */
export const httpFetch: typeof fetch = async (input, init = {}) => {
  const headers = init.headers ?? {};
  const plain = typeof input === 'string' && (init.body == null || typeof init.body === 'string') && !init.signal && !(headers instanceof Headers) && !Array.isArray(headers);
  if (!plain) return fetch(input, init);
  const url = new URL(input);
  const transport = url.protocol === 'https:' ? await import('node:https') : http;
  const method = init.method ?? 'GET';
  const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const request = transport.request(url, { method, headers: headers as Record<string, string> }, resolve);
    // fetch's own shape: "fetch failed" with the reason (ECONNREFUSED, …) as its cause.
    request.on('error', (error) => reject(new TypeError('fetch failed', { cause: error })));
    request.end(init.body ?? undefined);
  });
  const status = response.statusCode ?? 0;
  if (status >= 300 && status < 400 && response.headers.location) {
    response.resume();
    return fetch(input, init);
  }
  const answer = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) answer.append(name, v);
  }
  const empty = method === 'HEAD' || NULL_BODY.has(status);
  if (empty) response.resume();
  return new Response(empty ? null : (Readable.toWeb(response) as ReadableStream), { status, statusText: response.statusMessage, headers: answer });
};
