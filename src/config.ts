import { Resolver } from 'node:dns';
import net from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { parseSize, SIZE } from './core/engine/sizes.ts';
import { parseStorageUrl } from './core/storage/blob-store.ts';

const port = z.coerce.number().int().min(0).max(65535);
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

/** Service-account quota per plan, unless LAKEPORT_PLANS says otherwise (docs/operations.md). */
const DEFAULT_PLANS = 'free=2,team=25,enterprise=500';

/** `free=2,team=25` → {free: 2, team: 25}; undefined when malformed. */
function parsePlans(value: string): Record<string, number> | undefined {
  const plans: Record<string, number> = {};
  for (const pair of value.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    const match = /^([a-z0-9][a-z0-9_-]{0,31})=(\d{1,7})$/.exec(pair);
    if (!match || Number(match[2]) > 1_000_000 || Object.hasOwn(plans, match[1])) return undefined;
    plans[match[1]] = Number(match[2]);
  }
  return Object.keys(plans).length > 0 ? plans : undefined;
}

/** An issuer URL: https, or http only on a loopback host (a provider running beside Lakeport, tests). */
const issuerUrl = z.url().refine((v) => {
  const url = new URL(v);
  return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname));
}, 'must be an https:// URL (http:// only on a loopback host)');

function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/** The four settings of provider `idp_a` or `idp_b` (docs/auth.md, "Interactive sign-in"). */
function idpEnv<L extends 'A' | 'B'>(letter: L) {
  return {
    [`LAKEPORT_IDP_${letter}_ISSUER`]: optionalString.pipe(issuerUrl.optional()),
    [`LAKEPORT_IDP_${letter}_CLIENT_ID`]: optionalString,
    [`LAKEPORT_IDP_${letter}_CLIENT_SECRET`]: optionalString,
    [`LAKEPORT_IDP_${letter}_NAME`]: optionalString,
  } as Record<`LAKEPORT_IDP_${L}_${'ISSUER' | 'CLIENT_ID' | 'CLIENT_SECRET' | 'NAME'}`, typeof optionalString>;
}

/** An external OpenID Connect provider people sign in with (`LAKEPORT_IDP_A_*`, `LAKEPORT_IDP_B_*`). */
export interface IdentityProviderConfig {
  readonly id: 'idp_a' | 'idp_b';
  readonly issuer: string;
  readonly clientId: string;
  /** Never logged nor answered. */
  readonly clientSecret: string;
  readonly name: string;
}

function identityProviders(e: Record<string, unknown>): IdentityProviderConfig[] {
  const providers: IdentityProviderConfig[] = [];
  for (const letter of ['A', 'B'] as const) {
    const at = (key: string) => e[`LAKEPORT_IDP_${letter}_${key}`] as string | undefined;
    const issuer = at('ISSUER');
    const set = ['CLIENT_ID', 'CLIENT_SECRET', 'NAME'].filter((k) => at(k) !== undefined);
    if (issuer === undefined) {
      if (set.length > 0) throw new ConfigError(`invalid configuration: LAKEPORT_IDP_${letter}_ISSUER: required when LAKEPORT_IDP_${letter}_${set[0]} is set`);
      continue;
    }
    for (const key of ['CLIENT_ID', 'CLIENT_SECRET']) {
      if (at(key) === undefined) throw new ConfigError(`invalid configuration: LAKEPORT_IDP_${letter}_${key}: required when LAKEPORT_IDP_${letter}_ISSUER is set`);
    }
    providers.push({
      id: letter === 'A' ? 'idp_a' : 'idp_b',
      issuer,
      clientId: at('CLIENT_ID')!,
      clientSecret: at('CLIENT_SECRET')!,
      name: at('NAME') ?? new URL(issuer).hostname,
    });
  }
  return providers;
}

const EnvSchema = z.object({
  HOST: z.string().default('127.0.0.1'),
  PORT: port.default(8080),
  LAKEPORT_PUBLIC_URL: optionalString.pipe(z.url().optional()),
  LAKEPORT_DATA_DIR: z.string().default('./.lakeport'),
  DATABASE_URL: optionalString.pipe(
    z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
      .optional(),
  ),
  LAKEPORT_STORAGE_URL: optionalString.superRefine((v, ctx) => {
    if (v === undefined) return;
    try {
      parseStorageUrl(v);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
  }),
  S3_ENDPOINT: optionalString,
  S3_REGION: optionalString.transform((v) => v ?? 'us-east-1'),
  AWS_ACCESS_KEY_ID: optionalString,
  AWS_SECRET_ACCESS_KEY: optionalString,
  AWS_SESSION_TOKEN: optionalString,
  LAKEPORT_S3_CACHE_MAX_BYTES: optionalString.pipe(z.coerce.number<string | undefined>().int().min(1).optional()),
  LAKEPORT_S3_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(600).default(30),
  LAKEPORT_ADMIN_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
  LAKEPORT_MASTER_KEY: optionalString,
  LAKEPORT_METRICS_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
  LAKEPORT_WORKER_PORT: optionalString.pipe(z.coerce.number<string | undefined>().int().min(0).max(65535).optional()),
  LAKEPORT_MAX_CLOCK_SKEW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(30),
  LAKEPORT_ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(86_400).default(900),
  LAKEPORT_REFRESH_TOKEN_TTL_DAYS: z.coerce.number().int().min(1).max(365).default(30),
  LAKEPORT_AUTH_CACHE_SECONDS: z.coerce.number().int().min(0).max(60).default(5),
  LAKEPORT_JOB_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(86_400).default(300),
  LAKEPORT_JOB_WORKERS: z.coerce.number().int().min(0).max(64).default(4),
  LAKEPORT_JOB_MEMORY_LIMIT: z.string().regex(SIZE, 'a size such as 512MB or 2GB').default('1GB'),
  LAKEPORT_JOB_THREADS: z.coerce.number().int().min(1).max(64).default(2),
  LAKEPORT_JOB_ISOLATION: z.enum(['process', 'inline']).default('process'),
  LAKEPORT_JOB_MEMORY_BUDGET: optionalString.pipe(z.string().regex(SIZE, 'a size such as 4GB').optional()),
  LAKEPORT_JOBS_PER_IDENTITY: optionalString.pipe(z.coerce.number<string | undefined>().int().min(1).max(64).optional()),
  LAKEPORT_RESULT_MAX_BYTES: optionalString.pipe(z.string().regex(SIZE, 'a size such as 1GB').optional()),
  LAKEPORT_RESULT_QUOTA_BYTES: optionalString.pipe(z.string().regex(SIZE, 'a size such as 10GB').optional()),
  LAKEPORT_RESULT_RETENTION_HOURS: z.coerce.number().min(0.01).max(24 * 365).default(24),
  LAKEPORT_UNDROP_RETENTION_HOURS: z.coerce.number().min(0).max(24 * 365).default(24 * 7),
  LAKEPORT_FILE_DELETE_GRACE_SECONDS: optionalString.pipe(z.coerce.number<string | undefined>().int().min(0).max(30 * 86_400).optional()),
  LAKEPORT_EXTERNAL_S3_ENDPOINT: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  LAKEPORT_EXTERNAL_READ_MAX_BYTES: optionalString.pipe(z.coerce.number<string | undefined>().int().min(1).optional()),
  LAKEPORT_DNS_SERVERS: optionalString.superRefine((v, ctx) => {
    if (v === undefined) return;
    try {
      new Resolver().setServers(splitList(v));
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `not a list of resolver addresses (host, host:port or [v6]:port): ${(err as Error).message}` });
    }
  }),
  LAKEPORT_DNS_TIMEOUT_MS: z.coerce.number().int().min(50).max(60_000).default(2000),
  LAKEPORT_DNS_TRIES: z.coerce.number().int().min(1).max(10).default(2),
  LAKEPORT_PAYMENTS_PROCESSOR: z.enum(['sandbox', 'stripe']).default('sandbox'),
  LAKEPORT_STRIPE_SECRET_KEY: optionalString.pipe(z.string().regex(/^(sk|rk)_(test|live)_[A-Za-z0-9]+$/, 'a Stripe secret key (sk_test_… or sk_live_…)').optional()),
  LAKEPORT_STRIPE_API_BASE: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  LAKEPORT_STRIPE_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(20_000),
  LAKEPORT_PLANS: z
    .string()
    .default(DEFAULT_PLANS)
    .superRefine((v, ctx) => {
      if (parsePlans(v) === undefined) ctx.addIssue({ code: 'custom', message: 'must be comma-separated NAME=QUOTA pairs such as free=2,team=25 (names a-z 0-9 _ -, quotas 0-1000000)' });
    }),
  LAKEPORT_DEFAULT_PLAN: z.string().default('free'),
  ...idpEnv('A'),
  ...idpEnv('B'),
  LAKEPORT_LOGIN_TTL_SECONDS: z.coerce.number().int().min(30).max(3600).default(600),
  LAKEPORT_IDP_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(120).default(10),
  LAKEPORT_CATALOG_TIMEOUT_SECONDS: z.coerce.number().min(0.1).max(300).default(10),
  LAKEPORT_CATALOG_ALLOW_PRIVATE_NETWORKS: z
    .string()
    .regex(/^(true|false)$/i, 'must be true or false')
    .default('false'),
  LAKEPORT_COMPACTION: z.enum(['on', 'off']).default('on'),
  LAKEPORT_COMPACTION_MIN_FILES: z.coerce.number().int().min(2).max(100_000).default(32),
  LAKEPORT_COMPACTION_SMALL_FILE: z.string().regex(SIZE, 'a size such as 8MiB').default('8MiB'),
  LAKEPORT_COMPACTION_TARGET_FILE: z.string().regex(SIZE, 'a size such as 128MiB').default('128MiB'),
  LAKEPORT_COMPACTION_DELAY_SECONDS: z.coerce.number().min(0).max(3600).default(5),
  LAKEPORT_ICEBERG_LOCATIONS: z.enum(['http', 'storage']).default('http'),
  LAKEPORT_CONSOLE_DIR: optionalString,
  LAKEPORT_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LAKEPORT_TRUST_PROXY: optionalString.superRefine((v, ctx) => {
    if (v === undefined || /^(true|false)$/i.test(v)) return;
    const bad = v.split(',').map((s) => s.trim()).filter((s) => !TRUSTED_PROXY_NAMES.includes(s) && !isAddressOrCidr(s));
    if (bad.length > 0) ctx.addIssue({ code: 'custom', message: `not true, false, or proxy addresses/CIDRs: ${bad.join(', ')}` });
  }),
});

/** Every environment variable Lakeport reads (test/deploy-docs.test.ts checks the deploy files against it). */
export const SETTING_NAMES: readonly string[] = Object.keys(EnvSchema.shape);

export interface Config {
  readonly host: string;
  readonly port: number;
  /** Explicit public base URL; when absent it is derived from the listening address. */
  readonly publicUrl: string | undefined;
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
  readonly storageUrl: string | undefined;
  readonly s3Endpoint: string | undefined;
  /** S3 region (`S3_REGION`, default `us-east-1`); S3-compatible servers mostly ignore it. */
  readonly s3Region: string;
  /** Explicit S3 credentials (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`); unset → the AWS SDK's default chain. */
  readonly s3AccessKeyId: string | undefined;
  readonly s3SecretAccessKey: string | undefined;
  readonly s3SessionToken: string | undefined;
  /** Size limit of the local read-through cache of S3 blobs (`LAKEPORT_S3_CACHE_MAX_BYTES`); unset → 2 GiB. */
  readonly s3CacheMaxBytes: number | undefined;
  /** An S3 request that sends or receives nothing this long (or cannot connect) is abandoned and retried (`LAKEPORT_S3_TIMEOUT_SECONDS`, default 30). */
  readonly s3TimeoutSeconds: number;
  readonly adminToken: string | undefined;
  readonly masterKey: string | undefined;
  /** The bearer token that reads GET /metrics besides the admin token (`LAKEPORT_METRICS_TOKEN`); unset → the admin token only (docs/deploy.md, "Metrics"). */
  readonly metricsToken: string | undefined;
  /** `lakeport worker` answers /healthz, /readyz and /metrics on HOST and this port (`LAKEPORT_WORKER_PORT`); unset → it listens on nothing. */
  readonly workerPort: number | undefined;
  /** A start on a host whose clock is further than this from the database's is refused (`LAKEPORT_MAX_CLOCK_SKEW_SECONDS`, default 30). */
  readonly maxClockSkewSeconds: number;
  readonly accessTokenTtlSeconds: number;
  readonly refreshTokenTtlDays: number;
  /**
   * How long a server keeps what it verified of a credential, refresh token or access token
   * (`LAKEPORT_AUTH_CACHE_SECONDS`, 0–60, default 5): how late another server's revocation bites here.
   * 0 keeps nothing. docs/auth.md, "Performance and caching".
   */
  readonly authCacheSeconds: number;
  readonly logLevel: string;
  /**
   * Fastify's `trustProxy` (`LAKEPORT_TRUST_PROXY`): unset/`false` → the socket's address is the
   * client's; a comma-separated list of proxy addresses/CIDRs (or `loopback`, `linklocal`,
   * `uniquelocal`) → X-Forwarded-For from those is believed; `true` → always (only when nothing can
   * reach the server but the proxy). Failed-attempt throttling counts by it. (Fastify 5 ignores hop
   * counts — it cannot check the immediate peer with one — so they are not offered.)
   */
  readonly trustProxy: boolean | string[];
  /** Query jobs: time limit, jobs run at once per process (0: this process runs none), and each job's DuckDB limits. */
  readonly jobTimeoutSeconds: number;
  readonly jobWorkers: number;
  readonly jobMemoryLimit: string;
  readonly jobThreads: number;
  /** `process`: job queries run in a child process (the default); `inline`: in this process (tests). */
  readonly jobIsolation: 'process' | 'inline';
  /** Memory of all job queries together (`LAKEPORT_JOB_MEMORY_BUDGET`; default: workers × the per-job limit + 512 MiB). */
  readonly jobMemoryBudgetBytes: number;
  /** Jobs of one identity running at once (`LAKEPORT_JOBS_PER_IDENTITY`; default: half the workers, at least 1). */
  readonly jobsPerIdentity: number;
  /** A job's result at most (`LAKEPORT_RESULT_MAX_BYTES`, default 1 GiB); an identity's kept results at most (`LAKEPORT_RESULT_QUOTA_BYTES`, default 10 GiB). */
  readonly resultMaxBytes: number;
  readonly resultQuotaBytes: number;
  /** Results are removed this long after their job finished (`LAKEPORT_RESULT_RETENTION_HOURS`, default 24). */
  readonly resultRetentionMs: number;
  /** A dropped dataset stays restorable by UNDROP DATASET this long, then is purged (`LAKEPORT_UNDROP_RETENTION_HOURS`, default 168: 7 days). */
  readonly undropRetentionMs: number;
  /**
   * A file no snapshot needs any more (expired or purged) waits this long before its blob is deleted
   * (`LAKEPORT_FILE_DELETE_GRACE_SECONDS`, default one hour), never less than the job timeout.
   */
  readonly fileGraceMs: number;
  /**
   * READ_* of private storage: an S3-compatible endpoint for s3:// URLs (`LAKEPORT_EXTERNAL_S3_ENDPOINT`,
   * path-style; unset → Amazon S3), and the bytes one job may copy (`LAKEPORT_EXTERNAL_READ_MAX_BYTES`, default 1 GiB).
   */
  readonly externalS3Endpoint: string | undefined;
  readonly externalReadMaxBytes: number;
  /** Domain verification's TXT lookups: resolvers (`LAKEPORT_DNS_SERVERS`, comma-separated; unset → the system's), per-try timeout and tries. */
  readonly dnsServers: string[] | undefined;
  readonly dnsTimeoutMs: number;
  readonly dnsTries: number;
  /**
   * Payments (docs/payments.md): `sandbox` (test mode, the default) or `stripe` with its secret key,
   * API base URL (default https://api.stripe.com) and per-request time limit.
   */
  readonly payments: {
    readonly processor: 'sandbox' | 'stripe';
    readonly stripe: { readonly secretKey: string | undefined; readonly apiBase: string; readonly timeoutMs: number };
  };
  /** Service-account quota per plan (`LAKEPORT_PLANS`) and the plan of accounts not given one (`LAKEPORT_DEFAULT_PLAN`). */
  readonly plans: { readonly quotas: Readonly<Record<string, number>>; readonly defaultPlan: string };
  /** Interactive sign-in: the configured OpenID Connect providers (0–2), and how long a started login may take (`LAKEPORT_LOGIN_TTL_SECONDS`, default 600). */
  readonly identityProviders: readonly IdentityProviderConfig[];
  readonly loginTtlSeconds: number;
  /** A provider's discovery or token request taking longer is answered 504 (`LAKEPORT_IDP_TIMEOUT_SECONDS`, default 10). */
  readonly idpTimeoutSeconds: number;
  /**
   * Calls to external catalogs bound to workspaces (docs/catalog-bindings.md): each call's time limit
   * (`LAKEPORT_CATALOG_TIMEOUT_SECONDS`, default 10), and whether loopback, private and link-local
   * addresses may be called (`LAKEPORT_CATALOG_ALLOW_PRIVATE_NETWORKS`, default false; also allows http://).
   */
  readonly catalogs: { readonly timeoutMs: number; readonly allowPrivateNetworks: boolean };
  /**
   * Compaction of small files (docs/compaction.md): automatic compaction on or off (`LAKEPORT_COMPACTION`,
   * default on), how many files smaller than `smallFileBytes` (`LAKEPORT_COMPACTION_SMALL_FILE`, 8 MiB)
   * start one (`LAKEPORT_COMPACTION_MIN_FILES`, 32), the size of the files it writes
   * (`LAKEPORT_COMPACTION_TARGET_FILE`, 128 MiB) and how long after a commit it waits (`LAKEPORT_COMPACTION_DELAY_SECONDS`, 5).
   */
  /**
   * Where the Iceberg catalog's table metadata says files are (`LAKEPORT_ICEBERG_LOCATIONS`, docs/iceberg.md):
   * `http` (default) Lakeport's authorized file route; `storage` the blob store's own URIs (`s3://bucket/…`), for
   * engines that read the storage with their own credentials.
   */
  readonly icebergLocations: 'http' | 'storage';
  /** The built web console served at `/` (`LAKEPORT_CONSOLE_DIR`; default: dist/console of this checkout, which `npm ci` builds). */
  readonly consoleDir: string | undefined;
  readonly compaction: {
    readonly automatic: boolean;
    readonly minSmallFiles: number;
    readonly smallFileBytes: number;
    readonly targetFileBytes: number;
    readonly delayMs: number;
  };
}

export class ConfigError extends Error {}

const TRUSTED_PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function isAddressOrCidr(value: string): boolean {
  const [address, bits, ...rest] = value.split('/');
  if (rest.length > 0 || !net.isIP(address)) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (net.isIPv4(address) ? 32 : 128);
}

const splitList = (value: string) => value.split(',').map((s) => s.trim()).filter((s) => s !== '');

function parseTrustProxy(value: string | undefined): boolean | string[] {
  if (value === undefined || value.toLowerCase() === 'false') return false;
  if (value.toLowerCase() === 'true') return true;
  return value.split(',').map((s) => s.trim()).filter((s) => s !== '');
}

/** Parses the environment once; nothing else in the code base reads process.env. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${lines.join('; ')}`);
  }
  const e = parsed.data;
  if (e.LAKEPORT_PAYMENTS_PROCESSOR === 'stripe' && e.LAKEPORT_STRIPE_SECRET_KEY === undefined) {
    throw new ConfigError('invalid configuration: LAKEPORT_STRIPE_SECRET_KEY: required when LAKEPORT_PAYMENTS_PROCESSOR=stripe');
  }
  if (parseSize(e.LAKEPORT_COMPACTION_TARGET_FILE) < parseSize(e.LAKEPORT_COMPACTION_SMALL_FILE)) {
    throw new ConfigError('invalid configuration: LAKEPORT_COMPACTION_TARGET_FILE: must be at least LAKEPORT_COMPACTION_SMALL_FILE');
  }
  const quotas = parsePlans(e.LAKEPORT_PLANS)!;
  if (!Object.hasOwn(quotas, e.LAKEPORT_DEFAULT_PLAN)) {
    throw new ConfigError(`invalid configuration: LAKEPORT_DEFAULT_PLAN: '${e.LAKEPORT_DEFAULT_PLAN}' is not a plan of LAKEPORT_PLANS (${Object.keys(quotas).join(', ')})`);
  }
  return Object.freeze({
    host: e.HOST,
    port: e.PORT,
    publicUrl: e.LAKEPORT_PUBLIC_URL?.replace(/\/+$/, ''),
    dataDir: path.resolve(e.LAKEPORT_DATA_DIR),
    databaseUrl: e.DATABASE_URL,
    storageUrl: e.LAKEPORT_STORAGE_URL,
    s3Endpoint: e.S3_ENDPOINT,
    s3Region: e.S3_REGION,
    s3AccessKeyId: e.AWS_ACCESS_KEY_ID,
    s3SecretAccessKey: e.AWS_SECRET_ACCESS_KEY,
    s3SessionToken: e.AWS_SESSION_TOKEN,
    s3CacheMaxBytes: e.LAKEPORT_S3_CACHE_MAX_BYTES,
    s3TimeoutSeconds: e.LAKEPORT_S3_TIMEOUT_SECONDS,
    adminToken: e.LAKEPORT_ADMIN_TOKEN,
    masterKey: e.LAKEPORT_MASTER_KEY,
    metricsToken: e.LAKEPORT_METRICS_TOKEN,
    maxClockSkewSeconds: e.LAKEPORT_MAX_CLOCK_SKEW_SECONDS,
    workerPort: e.LAKEPORT_WORKER_PORT,
    accessTokenTtlSeconds: e.LAKEPORT_ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenTtlDays: e.LAKEPORT_REFRESH_TOKEN_TTL_DAYS,
    authCacheSeconds: e.LAKEPORT_AUTH_CACHE_SECONDS,
    logLevel: e.LAKEPORT_LOG_LEVEL,
    trustProxy: parseTrustProxy(e.LAKEPORT_TRUST_PROXY),
    jobTimeoutSeconds: e.LAKEPORT_JOB_TIMEOUT_SECONDS,
    jobWorkers: e.LAKEPORT_JOB_WORKERS,
    jobMemoryLimit: e.LAKEPORT_JOB_MEMORY_LIMIT,
    jobThreads: e.LAKEPORT_JOB_THREADS,
    jobIsolation: e.LAKEPORT_JOB_ISOLATION,
    jobMemoryBudgetBytes: e.LAKEPORT_JOB_MEMORY_BUDGET ? parseSize(e.LAKEPORT_JOB_MEMORY_BUDGET) : Math.max(1, e.LAKEPORT_JOB_WORKERS) * parseSize(e.LAKEPORT_JOB_MEMORY_LIMIT) + 512 * 2 ** 20,
    jobsPerIdentity: e.LAKEPORT_JOBS_PER_IDENTITY ?? Math.max(1, Math.ceil(e.LAKEPORT_JOB_WORKERS / 2)),
    resultMaxBytes: e.LAKEPORT_RESULT_MAX_BYTES ? parseSize(e.LAKEPORT_RESULT_MAX_BYTES) : 2 ** 30,
    resultQuotaBytes: e.LAKEPORT_RESULT_QUOTA_BYTES ? parseSize(e.LAKEPORT_RESULT_QUOTA_BYTES) : 10 * 2 ** 30,
    resultRetentionMs: e.LAKEPORT_RESULT_RETENTION_HOURS * 3600_000,
    undropRetentionMs: e.LAKEPORT_UNDROP_RETENTION_HOURS * 3600_000,
    fileGraceMs: Math.max(e.LAKEPORT_FILE_DELETE_GRACE_SECONDS ?? 3600, e.LAKEPORT_JOB_TIMEOUT_SECONDS) * 1000,
    externalS3Endpoint: e.LAKEPORT_EXTERNAL_S3_ENDPOINT,
    externalReadMaxBytes: e.LAKEPORT_EXTERNAL_READ_MAX_BYTES ?? 1024 ** 3,
    dnsServers: e.LAKEPORT_DNS_SERVERS === undefined ? undefined : splitList(e.LAKEPORT_DNS_SERVERS),
    dnsTimeoutMs: e.LAKEPORT_DNS_TIMEOUT_MS,
    dnsTries: e.LAKEPORT_DNS_TRIES,
    payments: {
      processor: e.LAKEPORT_PAYMENTS_PROCESSOR,
      stripe: {
        secretKey: e.LAKEPORT_STRIPE_SECRET_KEY,
        apiBase: e.LAKEPORT_STRIPE_API_BASE ?? 'https://api.stripe.com',
        timeoutMs: e.LAKEPORT_STRIPE_TIMEOUT_MS,
      },
    },
    plans: { quotas: Object.freeze(quotas), defaultPlan: e.LAKEPORT_DEFAULT_PLAN },
    identityProviders: Object.freeze(identityProviders(e).map((p) => Object.freeze(p))),
    loginTtlSeconds: e.LAKEPORT_LOGIN_TTL_SECONDS,
    idpTimeoutSeconds: e.LAKEPORT_IDP_TIMEOUT_SECONDS,
    icebergLocations: e.LAKEPORT_ICEBERG_LOCATIONS,
    consoleDir: e.LAKEPORT_CONSOLE_DIR === undefined ? undefined : path.resolve(e.LAKEPORT_CONSOLE_DIR),
    catalogs: Object.freeze({
      timeoutMs: Math.round(e.LAKEPORT_CATALOG_TIMEOUT_SECONDS * 1000),
      allowPrivateNetworks: e.LAKEPORT_CATALOG_ALLOW_PRIVATE_NETWORKS.toLowerCase() === 'true',
    }),
    compaction: Object.freeze({
      automatic: e.LAKEPORT_COMPACTION === 'on',
      minSmallFiles: e.LAKEPORT_COMPACTION_MIN_FILES,
      smallFileBytes: parseSize(e.LAKEPORT_COMPACTION_SMALL_FILE),
      targetFileBytes: parseSize(e.LAKEPORT_COMPACTION_TARGET_FILE),
      delayMs: e.LAKEPORT_COMPACTION_DELAY_SECONDS * 1000,
    }),
  });
}
