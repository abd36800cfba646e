import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse } from 'csv-parse/sync';

/** The one client the fake's token endpoint knows. */
export const CLIENT_ID = 'svc-loader';
export const CLIENT_SECRET = 'lpsk_test_secret';

/** A sample part of a negotiate request, as the server received it. */
export interface Sample {
  name: string;
  type: string;
  bytes: Buffer;
}

/** A request the fake received, with what it read of the body. */
export interface Recorded {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** A JSON body (PATCH, accept, commit with a message). */
  json?: any;
  /** The multipart body of a negotiate: the contract part, every part's name in order, the samples. */
  form?: { contract: any; fields: string[]; samples: Sample[] };
  /** The body of a data write, and in how many chunks it came. */
  data?: { length: number; sha256: string; chunks: number };
}

export interface FakeUploadOptions {
  /** The detail of the 401 for wrong client credentials. */
  invalidClientDetail?: string;
  /** The schema_fingerprint a PATCH answers with; the stored contract keeps its own (default: unchanged). */
  patchFingerprint?: string;
  /** The rows every data write counts (default: the CSV records in its body). */
  rowsPerWrite?: number;
  /** The number of the first snapshot (`snap_<n>`); each new idempotency key takes the next. */
  firstSnapshot?: number;
}

const PLAN = [
  { column: 'id', action: 'keep', source_type: 'BIGINT', target_type: 'BIGINT', nullable: false },
  { column: 'qty', action: 'cast', source_type: 'VARCHAR', target_type: 'INTEGER', nullable: true },
  { column: 'note', action: 'keep', source_type: 'VARCHAR', target_type: 'VARCHAR', nullable: true },
];

/**
 * A small fake of the upload API (node:http) on loopback, recording every request: the token
 * endpoint (client credentials and refresh grants, a new access token each time) and the contract
 * calls (negotiate, get, patch, delete, accept, data, commit with idempotency keys). Negotiate
 * answers the three-column PLAN with one warning, `proposed` for inferred schemas and `accepted`
 * otherwise; contracts are numbered `ct_1`, `ct_2`, …
 */
export class FakeUploadServer {
  server!: http.Server;
  url = '';
  requests: Recorded[] = [];
  /** The grant type of every token request, in order. */
  tokenGrants: string[] = [];
  validTokens = new Set<string>();
  validRefresh = new Set<string>();
  expiresIn = 900;
  /** Overrides merged into the negotiated contract (state, plan, issues, …). */
  contract: Record<string, unknown> = {};
  /** The 409 body that refuses every data write. */
  refuseWrite?: Record<string, unknown>;
  /** How many commits to answer by breaking the connection. */
  dropCommits = 0;
  /** Answer a 401 without reading the request body (as a server's auth hook may). */
  earlyUnauthorized = false;
  #options: FakeUploadOptions;
  #issued = 0;
  #negotiated = 0;
  #contracts = new Map<string, any>();
  #commits = new Map<string, any>();

  constructor(options: FakeUploadOptions = {}) {
    this.#options = options;
  }

  async start() {
    this.server = http.createServer((req, res) => {
      this.#handle(req, res).catch((error) => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ detail: String(error), code: 'FAKE_ERROR' }));
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop() {
    this.server.closeAllConnections();
    return new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The requests to the upload API (not the token endpoint). */
  apiRequests() {
    return this.requests.filter((r) => r.path.startsWith('/upload/'));
  }

  /** The upload API requests as `METHOD /path`. */
  calls() {
    return this.apiRequests().map((r) => `${r.method} ${r.path}`);
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://fake');
    const send = (status: number, body?: unknown) => {
      res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
      res.end(body === undefined ? undefined : JSON.stringify(body));
    };
    const recorded: Recorded = { method: req.method ?? '', path: url.pathname, headers: req.headers };
    this.requests.push(recorded);

    if (url.pathname === '/auth/token' && req.method === 'POST') {
      const form = new URLSearchParams((await readAll(req)).toString());
      const grant = form.get('grant_type') ?? 'client_credentials';
      this.tokenGrants.push(grant);
      if (grant === 'client_credentials') {
        if (form.get('client_id') !== CLIENT_ID || form.get('client_secret') !== CLIENT_SECRET) {
          return send(401, { error: 'invalid_client', detail: this.#options.invalidClientDetail ?? 'unknown client or wrong secret', code: 'INVALID_CLIENT' });
        }
        const refresh = `rt-${this.validRefresh.size + 1}`;
        this.validRefresh.add(refresh);
        return send(200, { access_token: this.#issue(), token_type: 'Bearer', expires_in: this.expiresIn, refresh_token: refresh });
      }
      if (grant === 'refresh_token') {
        if (!this.validRefresh.has(form.get('refresh_token') ?? '')) return send(400, { error: 'invalid_grant', detail: 'refresh token is not valid', code: 'INVALID_GRANT' });
        return send(200, { access_token: this.#issue(), token_type: 'Bearer', expires_in: this.expiresIn });
      }
      return send(400, { error: 'unsupported_grant_type', detail: 'no', code: 'UNSUPPORTED_GRANT_TYPE' });
    }

    const auth = req.headers.authorization ?? '';
    if (!auth.startsWith('Bearer ') || !this.validTokens.has(auth.slice(7))) {
      if (!this.earlyUnauthorized) await readAll(req);
      return send(401, { detail: 'invalid token', code: 'INVALID_TOKEN' });
    }

    if (url.pathname === '/upload/v2/contracts' && req.method === 'POST') {
      // A real multipart parser: the WHATWG Request's formData() (undici, built into Node).
      const parsed = await new Request('http://fake/', { method: 'POST', headers: { 'content-type': req.headers['content-type'] ?? '' }, body: new Uint8Array(await readAll(req)) }).formData();
      const samples: Sample[] = [];
      let contract: any;
      for (const [name, value] of parsed) {
        if (name === 'contract' && typeof value === 'string') contract = JSON.parse(value);
        if (name === 'sample' && typeof value !== 'string') samples.push({ name: value.name, type: value.type, bytes: Buffer.from(await value.arrayBuffer()) });
      }
      recorded.form = { contract, fields: [...parsed.keys()], samples };
      if (!contract?.destination) return send(422, { detail: [{ loc: ['body', 'contract', 'destination'], msg: 'Field required', type: 'missing' }] });
      const mode = contract.schema.mode === 'auto' ? 'infer' : contract.schema.mode;
      const doc = {
        contract_id: `ct_${++this.#negotiated}`,
        state: mode === 'infer' ? 'proposed' : 'accepted',
        mode,
        requested_mode: contract.schema.mode,
        destination: contract.destination,
        commit_mode: contract.commit_mode ?? 'append',
        plan: PLAN,
        issues: [{ severity: 'warning', code: 'NULLS_FOUND', column: 'note', file: 'orders.csv', message: 'empty values become NULL' }],
        values: { id: 1, qty: '3', note: 'x' },
        schema_fingerprint: 'fp-1',
        expires_at: '2030-01-01T00:00:00Z',
        written: [],
        totals: { files: 0, rows: 0, bytes: 0 },
        // CSV files carry the dialect the server would read them with (here: the one asked for, or ',').
        files: samples.map((s) => ({
          name: s.name,
          format: /\.jsonl$/.test(s.name) ? 'jsonl' : /\.parquet$/.test(s.name) ? 'parquet' : 'csv',
          ...(/\.parquet$/.test(s.name) ? {} : { encoding: contract.format?.encoding ?? 'utf-8' }),
          ...(/\.(jsonl|parquet)$/.test(s.name)
            ? {}
            : {
                csv: {
                  delimiter: contract.format?.delimiter ?? ',',
                  quote: '"',
                  escape: '"',
                  header: contract.format?.header ?? true,
                  newline: '\n',
                  date_format: null,
                  timestamp_format: null,
                  encoding: contract.format?.encoding ?? 'utf-8',
                },
              }),
        })),
        ...this.contract,
      };
      this.#contracts.set(doc.contract_id, doc);
      return send(201, doc);
    }

    const match = /^\/upload\/v2\/contracts\/([^/]+)(?:\/(accept|data|commit))?$/.exec(url.pathname);
    if (!match) return send(404, { detail: 'no route', code: 'NOT_FOUND' });
    const contract = this.#contracts.get(decodeURIComponent(match[1]));
    if (!contract) {
      await readAll(req);
      return send(404, { detail: `contract ${match[1]} not found`, code: 'CONTRACT_NOT_FOUND' });
    }
    const action = match[2];
    if (!action) {
      if (req.method === 'GET') return send(200, contract);
      if (req.method === 'DELETE') {
        this.#contracts.delete(contract.contract_id);
        return send(204);
      }
      if (req.method === 'PATCH') {
        recorded.json = JSON.parse((await readAll(req)).toString());
        return send(200, { ...contract, schema_fingerprint: this.#options.patchFingerprint ?? contract.schema_fingerprint });
      }
    }
    if (action === 'accept' && req.method === 'PUT') {
      recorded.json = JSON.parse((await readAll(req)).toString());
      if (recorded.json.schema_fingerprint !== contract.schema_fingerprint) return send(409, { detail: 'fingerprint differs', code: 'FINGERPRINT_MISMATCH' });
      contract.state = 'accepted';
      return send(200, contract);
    }
    if (action === 'data' && req.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      recorded.data = { length: body.length, sha256: createHash('sha256').update(body).digest('hex'), chunks: chunks.length };
      if (contract.state !== 'accepted') return send(409, { detail: 'contract is not accepted', code: 'CONTRACT_NOT_ACCEPTED' });
      if (this.refuseWrite) return send(409, this.refuseWrite);
      const rows = this.#options.rowsPerWrite ?? (parse(body, { columns: true }) as unknown[]).length;
      contract.written.push({ file: req.headers['x-file-name'], format: 'csv', rows, bytes: body.length, source_bytes: body.length });
      contract.totals = { files: contract.written.length, rows: contract.totals.rows + rows, bytes: contract.totals.bytes + body.length };
      return send(200, { contract_id: contract.contract_id, written: contract.written, totals: contract.totals });
    }
    if (action === 'commit' && req.method === 'POST') {
      const body = await readAll(req);
      recorded.json = body.length ? JSON.parse(body.toString()) : undefined;
      if (this.dropCommits > 0) {
        this.dropCommits -= 1;
        req.socket.destroy(); // the connection breaks before any answer
        return;
      }
      const key = String(req.headers['idempotency-key'] ?? '');
      if (!this.#commits.has(key)) {
        this.#commits.set(key, {
          contract_id: contract.contract_id,
          state: 'committed',
          snapshot: { snapshot_id: `snap_${(this.#options.firstSnapshot ?? 1) + this.#commits.size}` },
          rows_written: contract.totals.rows,
          dataset: contract.destination,
          commit_mode: contract.commit_mode,
          // A replace answers how many rows the snapshot it replaced had (the fake says 5).
          rows_replaced: contract.commit_mode === 'replace' ? 5 : null,
        });
      }
      return send(200, this.#commits.get(key));
    }
    return send(405, { detail: 'method not allowed', code: 'METHOD_NOT_ALLOWED' });
  }

  #issue() {
    const token = `at-${++this.#issued}`;
    this.validTokens.add(token);
    return token;
  }
}

/** A request's whole body. */
async function readAll(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
