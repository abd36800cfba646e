import type { LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { isPublicAddress, systemResolver, type HostResolver } from './addresses.ts';

/** How outbound calls to servers named by users (external catalogs) behave (docs/security.md, "Outbound calls"). */
export interface OutboundSettings {
  /** The whole call at most: resolving, connecting, sending and reading the answer. */
  timeoutMs: number;
  /** Whether loopback, private, link-local and other non-public addresses may be called (off: refused). */
  allowPrivateNetworks: boolean;
  /** Answers longer than this are refused (default 8 MiB). */
  maxBodyBytes?: number;
  /** Resolves host names (default: the system's resolver). */
  resolve?: HostResolver;
}

/** Why an outbound call did not get an answer. */
export type OutboundFailure = 'invalid_url' | 'address_refused' | 'timeout' | 'unreachable' | 'too_large';

export class OutboundError extends Error {
  constructor(
    readonly kind: OutboundFailure,
    message: string,
  ) {
    super(message);
  }
}

export interface OutboundRequest {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
}

export interface OutboundResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

const DEFAULT_MAX_BODY = 8 * 2 ** 20;

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * An HTTP(S) client for servers whose address a user chose, guarded against server-side request
 * forgery: every address a host name resolves to is checked (all of them must be public unless
 * private networks are allowed), and the connection goes to a checked address — the check is the
 * connection's own `lookup`, so a name that resolves differently a moment later (DNS rebinding)
 * cannot slip through. Literal IP hosts are checked the same way. No redirect is followed; one
 * deadline covers the whole call; answers are capped in size.
 */
export class OutboundHttp {
  private readonly resolve: HostResolver;
  private readonly maxBodyBytes: number;

  constructor(private readonly settings: OutboundSettings) {
    this.resolve = settings.resolve ?? systemResolver;
    this.maxBodyBytes = settings.maxBodyBytes ?? DEFAULT_MAX_BODY;
  }

  get timeoutMs(): number {
    return this.settings.timeoutMs;
  }

  get allowsPrivateNetworks(): boolean {
    return this.settings.allowPrivateNetworks;
  }

  /** Whether an address may be called under these settings. */
  allows(address: string): boolean {
    return this.settings.allowPrivateNetworks || isPublicAddress(address);
  }

  /** Checks the URL's scheme and, for a literal IP host, its address; throws OutboundError (`invalid_url`, `address_refused`). */
  checkUrl(raw: string | URL): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new OutboundError('invalid_url', 'not a valid URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new OutboundError('invalid_url', 'only http:// and https:// URLs can be called');
    if (url.username !== '' || url.password !== '') throw new OutboundError('invalid_url', 'a URL may not carry credentials (user:password@)');
    const host = bareHost(url);
    if (net.isIP(host) && !this.allows(host)) throw refused(url.hostname);
    return url;
  }

  async request(target: string | URL, init: OutboundRequest = {}): Promise<OutboundResponse> {
    const url = this.checkUrl(target);
    const client = url.protocol === 'https:' ? https : http;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.settings.timeoutMs);
    let refusal: OutboundError | undefined;
    const lookup = (hostname: string, options: { all?: boolean }, callback: LookupCallback) => {
      this.resolve(hostname).then(
        (addresses) => {
          if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' }), []);
          if (!addresses.every((a) => this.allows(a))) {
            refusal = refused(hostname);
            return callback(refusal, []);
          }
          const all = addresses.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 }));
          return options.all ? callback(null, all) : callback(null, all[0].address, all[0].family);
        },
        (error: NodeJS.ErrnoException) => callback(Object.assign(new Error(`${hostname} does not resolve`), { code: error.code ?? 'ENOTFOUND' }), []),
      );
    };
    try {
      return await new Promise<OutboundResponse>((resolve, reject) => {
        const request = client.request(
          url,
          { method: init.method ?? 'GET', headers: init.headers, agent: false, lookup: lookup as never, signal: controller.signal },
          (response) => {
            const chunks: Buffer[] = [];
            let size = 0;
            response.on('data', (chunk: Buffer) => {
              size += chunk.length;
              if (size <= this.maxBodyBytes) return void chunks.push(chunk);
              reject(new OutboundError('too_large', `the answer is larger than ${this.maxBodyBytes} bytes`));
              request.destroy();
            });
            response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
            response.on('error', reject);
          },
        );
        request.on('error', reject);
        request.end(init.body);
      });
    } catch (error) {
      if (refusal) throw refusal;
      if (error instanceof OutboundError) throw error;
      if (controller.signal.aborted) throw new OutboundError('timeout', `no answer within ${this.settings.timeoutMs} ms`);
      const code = (error as NodeJS.ErrnoException).code;
      throw new OutboundError('unreachable', `${url.host} could not be reached${code ? ` (${code})` : ''}`);
    } finally {
      clearTimeout(timer);
    }
  }
}

function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

function refused(host: string): OutboundError {
  return new OutboundError('address_refused', `${host} is (or resolves to) a loopback, private, link-local or otherwise non-public address, which this server does not call`);
}
