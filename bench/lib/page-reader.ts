// Reads every page of an OData query, following @odata.nextLink, as a streaming client does. It runs
// in a worker thread of its own (see `PageReader`): the client shares the server's two cores, and a
// small heap of its own keeps the garbage collection of 43 MB of socket reads cheap, as it would be
// in a BI tool, instead of walking the benchmark's heap (DuckDB, the upload client) each time.
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { closeConnections, stream } from './http.ts';

export type Client = 'http' | 'fetch';

export interface ReadRequest {
  url: string;
  headers: Record<string, string>;
  client: Client;
  /** Count the rows: each row starts with this text (e.g. `{"id":`). */
  rowStart?: string;
}

export interface ReadResult {
  rows?: number;
  pages: number;
  seconds: number;
  bytes: number;
}

const TAIL_BYTES = 4096;
const NEXT_LINK = /"@odata\.nextLink":"([^"]+)"\}$/;

function occurrences(body: Buffer, needle: Buffer): number {
  let n = 0;
  for (let at = body.indexOf(needle); at >= 0; at = body.indexOf(needle, at + needle.length)) n++;
  return n;
}

/**
 * What a streaming client keeps of a page: its size, the last few KB (where nextLink is), and when
 * asked, how often `needle` occurs (also across chunk boundaries). The body itself is never held.
 */
class PageScan {
  bytes = 0;
  matches = 0;
  private tail: Buffer = Buffer.alloc(0);

  constructor(private readonly needle?: Buffer) {}

  push = (chunk: Buffer): void => {
    this.bytes += chunk.length;
    if (this.needle) {
      const straddling = Buffer.concat([this.tail.subarray(-(this.needle.length - 1)), chunk.subarray(0, this.needle.length - 1)]);
      this.matches += occurrences(straddling, this.needle) + occurrences(chunk, this.needle);
    }
    this.tail = chunk.length >= TAIL_BYTES ? chunk.subarray(-TAIL_BYTES) : Buffer.concat([this.tail, chunk]).subarray(-TAIL_BYTES);
  };

  text(): string {
    return this.tail.toString('latin1');
  }
}

async function get(url: string, headers: Record<string, string>, client: Client, scan: PageScan): Promise<void> {
  let status: number;
  if (client === 'fetch') {
    const response = await fetch(url, { headers });
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) scan.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    status = response.status;
  } else {
    status = await stream(url, { headers }, scan.push);
  }
  if (status !== 200) throw new Error(`${status} ${scan.text()}`);
}

async function readAll({ url: first, headers, client, rowStart }: ReadRequest): Promise<ReadResult> {
  const start = performance.now();
  const needle = rowStart === undefined ? undefined : Buffer.from(rowStart);
  let url: string | undefined = first;
  const result = { rows: 0, pages: 0, bytes: 0 };
  while (url) {
    const scan = new PageScan(needle);
    await get(url, headers, client, scan);
    result.bytes += scan.bytes;
    result.rows += scan.matches;
    result.pages++;
    url = NEXT_LINK.exec(scan.text())?.[1];
  }
  return { ...result, rows: needle ? result.rows : undefined, seconds: (performance.now() - start) / 1000 };
}

/** The reading client, in its own worker thread; one read at a time. */
export class PageReader {
  // The worker loads this module through tsx, as the benchmark was loaded.
  private readonly worker = new Worker(`import('tsx/esm/api').then(({ tsImport }) => tsImport(${JSON.stringify(import.meta.url)}, ${JSON.stringify(import.meta.url)}))`, { eval: true });

  /** Reads all pages; `clientCpuMs` is the process's CPU meanwhile (the benchmark's own thread waits). */
  async read(request: ReadRequest): Promise<ReadResult & { clientCpuMs: number }> {
    const cpu = process.cpuUsage();
    const answer = new Promise<{ result?: ReadResult; error?: string }>((resolve, reject) => {
      this.worker.once('message', resolve);
      this.worker.once('error', reject);
    });
    this.worker.postMessage(request);
    const { result, error } = await answer;
    this.worker.removeAllListeners('error');
    if (!result) throw new Error(error);
    const used = process.cpuUsage(cpu);
    return { ...result, clientCpuMs: (used.user + used.system) / 1000 };
  }

  async close(): Promise<void> {
    this.worker.postMessage('close');
    await new Promise((resolve) => this.worker.once('exit', resolve));
  }
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  port.on('message', (request: ReadRequest | 'close') => {
    if (request === 'close') {
      closeConnections();
      port.close();
      return;
    }
    readAll(request).then(
      (result) => port.postMessage({ result }),
      (error: unknown) => port.postMessage({ error: error instanceof Error ? error.message : String(error) }),
    );
  });
}
