import crypto from 'node:crypto';
import fs from 'node:fs';
import type http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';

/** A real S3-compatible server on loopback, for tests. */
export interface TestS3Server {
  /** `http://127.0.0.1:<port>`: pass as `S3_ENDPOINT` / the store's `endpoint` (path-style). */
  endpoint: string;
  /** An existing, empty bucket. */
  bucket: string;
  /** The credentials the server accepts (any region works). */
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  stop(): Promise<void>;
}

/**
 * Starts s3rver (a real S3 REST API over a temp directory, in this process) on 127.0.0.1 and a free
 * port, with one empty bucket (`lakeport` unless told). `stop()` closes it and removes the directory.
 *
 * For a store on it: `new S3BlobStore({ bucket, endpoint, forcePathStyle: true, credentials:
 * { accessKeyId, secretAccessKey }, cacheDir })`, or `createBlobStore({ storageUrl: 's3://lakeport/x',
 * s3Endpoint: endpoint, s3AccessKeyId: accessKeyId, s3SecretAccessKey: secretAccessKey, dataDir })`.
 */
export async function startS3Server(options: { bucket?: string; verifySignatures?: boolean } = {}): Promise<TestS3Server> {
  const bucket = options.bucket ?? 'lakeport';
  allowS3rverContinuationTokens();
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'lakeport-s3-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', directory, silent: true, configureBuckets: [{ name: bucket, configs: [] }] });
  serializeDeletes(server);
  if (options.verifySignatures) verifySignaturesV4(server, { S3RVER: 'S3RVER' });
  let port: number;
  try {
    ({ port } = await server.run());
  } catch (err) {
    fs.rmSync(directory, { recursive: true, force: true });
    throw err;
  }
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    accessKeyId: 'S3RVER', // s3rver's built-in account
    secretAccessKey: 'S3RVER',
    region: 'us-east-1',
    async stop() {
      await server.close();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}

// ---- fixes to the fake server (s3rver 3.7.1, unmaintained since 2021), not to the code under test ----

let tokensPatched = false;
/**
 * s3rver encrypts ListObjectsV2 continuation tokens with single DES, which OpenSSL 3 (Node ≥ 17)
 * refuses, so every listing of more than one page answers 500. It only needs a reversible cipher
 * of its own, so in test processes 'des' is served by 3DES (DES-EDE3-CBC, in OpenSSL's default
 * provider) with the 8-byte key repeated. Nothing in Lakeport uses DES.
 */
function allowS3rverContinuationTokens(): void {
  if (tokensPatched) return;
  tokensPatched = true;
  const c = crypto as unknown as Record<'createCipheriv' | 'createDecipheriv', (...args: unknown[]) => unknown>;
  for (const name of ['createCipheriv', 'createDecipheriv'] as const) {
    const original = c[name];
    c[name] = function (algorithm: unknown, key: unknown, iv: unknown, ...rest: unknown[]) {
      if (algorithm === 'des' && Buffer.isBuffer(key) && key.length === 8) {
        return original.call(crypto, 'des-ede3-cbc', Buffer.concat([key, key, key]), iv, ...rest);
      }
      return original.call(crypto, algorithm, key, iv, ...rest);
    };
  }
}

/** SigV4's URI encoding (RFC 3986 unreserved characters kept). */
const escapeUri = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const sha256hex = (data: string) => crypto.createHash('sha256').update(data, 'utf8').digest('hex');
const hmac = (key: crypto.BinaryLike, data: string) => crypto.createHmac('sha256', key).update(data, 'utf8').digest();

/**
 * s3rver checks that an access key id exists but never verifies a Signature Version 4 (its source:
 * "Signature version 4 calculation is unimplemented"), so a wrong secret key would be accepted.
 * With `verifySignatures`, requests signed with SigV4 in the Authorization header are verified
 * here, as S3 does (canonical request over the signed headers and the declared payload hash), and a
 * mismatch answers 403 SignatureDoesNotMatch. Unknown key ids are left to s3rver (InvalidAccessKeyId).
 */
function verifySignaturesV4(server: S3rver, secrets: Record<string, string>): void {
  const koa = server as unknown as { callback(): (req: http.IncomingMessage, res: http.ServerResponse) => void };
  const original = koa.callback.bind(server);
  koa.callback = () => {
    const handle = original();
    return (req, res) => {
      if (signatureMismatch(req, secrets)) {
        res.writeHead(403, { 'content-type': 'application/xml' });
        res.end(
          '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided. Check your key and signing method.</Message></Error>',
        );
        return;
      }
      handle(req, res);
    };
  };
}

function signatureMismatch(req: http.IncomingMessage, secrets: Record<string, string>): boolean {
  const auth = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request,\s*SignedHeaders=([^,]+),\s*Signature=([0-9a-f]+)$/.exec(req.headers.authorization ?? '');
  if (!auth) return false;
  const [, keyId, date, region, service, signedHeaders, signature] = auth;
  const secret = secrets[keyId];
  if (secret === undefined) return false;
  const [rawPath, rawQuery = ''] = (req.url ?? '/').split('?', 2) as [string, string?];
  const query = rawQuery
    .split('&')
    .filter((p) => p !== '')
    .map((p) => {
      const [k, v = ''] = p.split('=', 2) as [string, string?];
      return [escapeUri(decodeURIComponent(k)), escapeUri(decodeURIComponent(v))] as const;
    })
    .sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const names = signedHeaders.split(';');
  const headers = names.map((n) => `${n}:${String(req.headers[n] ?? '').trim().replace(/\s+/g, ' ')}\n`).join('');
  const payload = String(req.headers['x-amz-content-sha256'] ?? sha256hex(''));
  const canonical = [req.method, rawPath, query, headers, signedHeaders, payload].join('\n');
  const stringToSign = ['AWS4-HMAC-SHA256', String(req.headers['x-amz-date'] ?? ''), `${date}/${region}/${service}/aws4_request`, sha256hex(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), 'aws4_request');
  return crypto.createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex') !== signature;
}

/**
 * s3rver deletes an object's files and then removes directories it left empty; two deletes in one
 * directory at once (DeleteObjects runs its keys in parallel) race on that cleanup and answer 500.
 * Here the fake server's deletes run one at a time, and a directory already gone is no error.
 */
function serializeDeletes(server: S3rver): void {
  const store = (server as unknown as { store: { deleteObject(bucket: string, key: string): Promise<void> } }).store;
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
