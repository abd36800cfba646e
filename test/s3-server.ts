import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A real S3-compatible server on loopback, for tests. */
export interface TestS3Server {
  /** `http://127.0.0.1:<port>` — pass as `S3_ENDPOINT` / the store's `endpoint` (path-style). */
  endpoint: string;
  /** An existing, empty bucket. */
  bucket: string;
  /** The credentials the server accepts (any region works). */
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  stop(): Promise<void>;
}

interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
  store: { deleteObject(bucket: string, key: string): Promise<void> };
}
type S3rverConstructor = new (options: Record<string, unknown>) => S3rverInstance;

/**
 * Starts `s3rver` (an S3 API server over a temp directory) on 127.0.0.1 and a free port, with one
 * bucket `lakeport`. `stop()` closes it and removes the directory.
 */
export async function startS3Server(options: { bucket?: string } = {}): Promise<TestS3Server> {
  const bucket = options.bucket ?? 'lakeport';
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'lakeport-s3-'));
  // s3rver ships no types; the module name through a variable keeps TypeScript from resolving it.
  const moduleName = 's3rver';
  const { default: S3rver } = (await import(moduleName)) as { default: S3rverConstructor };
  const server = new S3rver({ port: 0, address: '127.0.0.1', directory, silent: true, configureBuckets: [{ name: bucket }] });
  serializeDeletes(server);
  let address: { address: string; port: number };
  try {
    address = await server.run();
  } catch (err) {
    fs.rmSync(directory, { recursive: true, force: true });
    throw err;
  }
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    bucket,
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    region: 'us-east-1',
    async stop() {
      await server.close();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}

/**
 * s3rver 3.7 deletes an object's files and then removes directories it left empty; two deletes in
 * one directory at once (DeleteObjects runs its keys in parallel) race on that cleanup and answer 500.
 * Running the fake server's deletes one at a time, and tolerating a directory already gone, fixes
 * the fake, not the code under test.
 */
function serializeDeletes(server: S3rverInstance): void {
  const store = server.store;
  const original = store.deleteObject.bind(store);
  let chain: Promise<unknown> = Promise.resolve();
  store.deleteObject = (bucket, key) => {
    const next = chain.then(() =>
      original(bucket, key).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT' && err.code !== 'ENOTEMPTY') throw err;
      }),
    );
    chain = next.catch(() => {});
    return next;
  };
}
