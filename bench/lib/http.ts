// A benchmark's HTTP client: Node's http over a keep-alive agent. The client shares the machine's
// two cores with the server, and fetch() costs it about twice the CPU per request and per byte.
import http from 'node:http';

const agent = new http.Agent({ keepAlive: true });

/** One request; resolves with the status and the whole body (whatever the status). */
export function request(url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const sent = http.request(url, { method: options.method ?? 'GET', headers: options.headers, agent }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (d: Buffer) => chunks.push(d));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    });
    sent.on('error', reject);
    sent.end(options.body);
  });
}

/** The JSON body of a 2xx answer; throws with the status and body otherwise. */
export async function requestJson<T>(url: string, options: Parameters<typeof request>[1] = {}): Promise<T> {
  const { status, body } = await request(url, options);
  if (status < 200 || status > 299) throw new Error(`${status} ${body.toString()}`);
  return JSON.parse(body.toString()) as T;
}

/** Closes the idle keep-alive connections, so the benchmark's process can exit. */
export function closeConnections(): void {
  agent.destroy();
}
