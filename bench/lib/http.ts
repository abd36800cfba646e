// A benchmark's HTTP client: Node's http over a keep-alive agent. The client shares the machine's
// two cores with the server, and fetch() costs it about twice the CPU per request and per byte.
import http from 'node:http';

const agent = new http.Agent({ keepAlive: true });

type RequestOptions = { method?: string; headers?: Record<string, string>; body?: string };

/**
 * One request whose body is handed to `onData` a chunk at a time, as a streaming client reads it:
 * nothing is kept, so a large body costs no copies and no garbage collection. Resolves with the
 * status when the body has ended.
 */
export function stream(url: string, options: RequestOptions, onData: (chunk: Buffer) => void): Promise<number> {
  return new Promise((resolve, reject) => {
    const sent = http.request(url, { method: options.method ?? 'GET', headers: options.headers, agent }, (response) => {
      response.on('data', onData);
      response.on('end', () => resolve(response.statusCode ?? 0));
      response.on('error', reject);
    });
    sent.on('error', reject);
    sent.end(options.body);
  });
}

/** One request; resolves with the status and the whole body (whatever the status). */
export async function request(url: string, options: RequestOptions = {}): Promise<{ status: number; body: Buffer }> {
  const chunks: Buffer[] = [];
  const status = await stream(url, options, (chunk) => chunks.push(chunk));
  return { status, body: Buffer.concat(chunks) };
}

/** The JSON body of a 2xx answer; throws with the status and body otherwise. */
export async function requestJson<T>(url: string, options: RequestOptions = {}): Promise<T> {
  const { status, body } = await request(url, options);
  if (status < 200 || status > 299) throw new Error(`${status} ${body.toString()}`);
  return JSON.parse(body.toString()) as T;
}

/** Closes the idle keep-alive connections, so the benchmark's process can exit. */
export function closeConnections(): void {
  agent.destroy();
}
