import { Resolver } from 'node:dns/promises';

export interface DnsOptions {
  /** Resolver addresses (`host`, `host:port`, `[v6]:port`); empty or absent: the system's. */
  servers?: string[];
  /** Per-try timeout of one query. */
  timeoutMs: number;
  /** Tries per server before giving up. */
  tries: number;
}

/**
 * What a TXT lookup found: the records (each record's character-strings joined, RFC 7208 §3.3);
 * `absent` when the name resolved without TXT records (NXDOMAIN or NODATA: the answer is "none");
 * `failed` when no answer came (timeout, SERVFAIL, refused, unreachable: try again later).
 */
export type TxtLookup =
  | { kind: 'found'; records: string[] }
  | { kind: 'absent'; code: 'ENOTFOUND' | 'ENODATA' }
  | { kind: 'failed'; code: string; message: string };

export type TxtResolver = (name: string) => Promise<TxtLookup>;

export const DEFAULT_DNS: DnsOptions = { timeoutMs: 2000, tries: 2 };

/** TXT lookups through real DNS with node:dns, against the configured resolvers or the system's. */
export function dnsTxtResolver(options: DnsOptions = DEFAULT_DNS): TxtResolver {
  const resolver = new Resolver({ timeout: options.timeoutMs, tries: options.tries });
  if (options.servers && options.servers.length > 0) resolver.setServers(options.servers);
  return async (name) => {
    try {
      const records = await resolver.resolveTxt(name);
      return { kind: 'found', records: records.map((strings) => strings.join('')) };
    } catch (error) {
      const code = String((error as { code?: unknown }).code ?? 'UNKNOWN');
      if (code === 'ENOTFOUND' || code === 'ENODATA') return { kind: 'absent', code };
      return { kind: 'failed', code, message: (error as Error).message };
    }
  };
}
