import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { importSPKI, jwtVerify } from 'jose';

/**
 * A fake of the two Google endpoints the GCS adapter uses, on loopback, for tests:
 * - the OAuth 2.0 token endpoint (`POST /token`, RFC 7523 JWT bearer grant), which verifies the
 *   assertion's RS256 signature with the service account's public key, its issuer, audience
 *   (Google's token URI, as a real key file names it) and read-only storage scope;
 * - the JSON API's object listing (`GET /storage/v1/b/<bucket>/o?prefix=&pageToken=`, paged) and
 *   media download (`GET /storage/v1/b/<bucket>/o/<object>?alt=media`), for tokens it issued.
 * Answers follow Google's shapes (`{"error": "invalid_grant", …}`, `{"error": {"code", "message"}}`).
 */
export interface FakeGcs {
  /** `http://127.0.0.1:<port>`: the adapter's `apiBase`. */
  url: string;
  /** `<url>/token`: the adapter's `tokenUrl`. */
  tokenUrl: string;
  /** A service-account key file (JSON text) whose key the fake accepts; token_uri is Google's. */
  key: string;
  /** The same account with another private key: the token endpoint refuses it. */
  wrongKey: string;
  clientEmail: string;
  /** Adds an object to a bucket (made on first use). */
  put(bucket: string, name: string, body: string | Buffer): void;
  /** Buckets the account may not read (403). */
  forbid(bucket: string): void;
  /** Requests seen, e.g. `GET /storage/v1/b/x/o?prefix=…`. */
  requests: string[];
  stop(): Promise<void>;
}

const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';
const READ_SCOPE = 'https://www.googleapis.com/auth/devstorage.read_only';

function keyFile(clientEmail: string, privateKey: string, keyId: string): string {
  return JSON.stringify({
    type: 'service_account',
    project_id: 'lakeport-test',
    private_key_id: keyId,
    private_key: privateKey,
    client_email: clientEmail,
    client_id: '1234567890',
    auth_uri: 'https://accounts.google.com/o/oauth2/auth',
    token_uri: GOOGLE_TOKEN_URI,
  });
}

export async function startFakeGcs(options: { pageSize?: number } = {}): Promise<FakeGcs> {
  const clientEmail = 'reader@lakeport-test.iam.gserviceaccount.com';
  const pair = () => crypto.generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
  const good = pair();
  const bad = pair();
  const publicKey = await importSPKI(good.publicKey, 'RS256');
  const buckets = new Map<string, Map<string, Buffer>>();
  const forbidden = new Set<string>();
  const tokens = new Set<string>();
  const requests: string[] = [];
  const pageSize = options.pageSize ?? 2;

  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const apiError = (res: http.ServerResponse, status: number, message: string) => json(res, status, { error: { code: status, message, errors: [{ message }] } });

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    requests.push(`${req.method} ${url.pathname}${url.search}`);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        if (req.method === 'POST' && url.pathname === '/token') {
          const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
          if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return json(res, 400, { error: 'unsupported_grant_type', error_description: 'Invalid grant_type' });
          try {
            const { payload } = await jwtVerify(form.get('assertion') ?? '', publicKey, { issuer: clientEmail, audience: GOOGLE_TOKEN_URI, algorithms: ['RS256'] });
            if (payload.scope !== READ_SCOPE) return json(res, 400, { error: 'invalid_scope', error_description: 'Bad scope' });
          } catch {
            return json(res, 400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' });
          }
          const token = `ya29.${crypto.randomBytes(16).toString('hex')}`;
          tokens.add(token);
          return json(res, 200, { access_token: token, expires_in: 3599, token_type: 'Bearer' });
        }
        const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
        if (!auth || !tokens.has(auth[1])) return apiError(res, 401, 'Invalid Credentials');
        const list = /^\/storage\/v1\/b\/([^/]+)\/o$/.exec(url.pathname);
        const media = /^\/storage\/v1\/b\/([^/]+)\/o\/(.+)$/.exec(url.pathname);
        const bucketName = decodeURIComponent((list ?? media)?.[1] ?? '');
        if (req.method !== 'GET' || (!list && !media)) return apiError(res, 404, 'Not Found');
        if (forbidden.has(bucketName)) return apiError(res, 403, `${clientEmail} does not have storage.objects.get access to the Google Cloud Storage bucket.`);
        const bucket = buckets.get(bucketName);
        if (!bucket) return apiError(res, 404, 'The specified bucket does not exist.');
        if (list) {
          const prefix = url.searchParams.get('prefix') ?? '';
          const names = [...bucket.keys()].filter((n) => n.startsWith(prefix)).sort();
          const from = Number(url.searchParams.get('pageToken') ?? 0);
          const size = Math.min(pageSize, Number(url.searchParams.get('maxResults') ?? pageSize));
          const page = names.slice(from, from + size);
          const next = from + size < names.length ? String(from + size) : undefined;
          return json(res, 200, { kind: 'storage#objects', items: page.map((name) => ({ name, size: String(bucket.get(name)!.length) })), ...(next ? { nextPageToken: next } : {}) });
        }
        if (url.searchParams.get('alt') !== 'media') return apiError(res, 400, 'only alt=media is faked');
        const body = bucket.get(decodeURIComponent(media![2]));
        if (!body) return apiError(res, 404, 'No such object');
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(body.length) });
        res.end(body);
      })().catch(() => {
        if (!res.headersSent) apiError(res, 500, 'fake failed');
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    tokenUrl: `${url}/token`,
    key: keyFile(clientEmail, good.privateKey, 'key-1'),
    wrongKey: keyFile(clientEmail, bad.privateKey, 'key-2'),
    clientEmail,
    put(bucket, name, body) {
      if (!buckets.has(bucket)) buckets.set(bucket, new Map());
      buckets.get(bucket)!.set(name, Buffer.isBuffer(body) ? body : Buffer.from(body));
    },
    forbid(bucket) {
      forbidden.add(bucket);
    },
    requests,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
