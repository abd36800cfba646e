import path from 'node:path';
import { z } from 'zod';
import { parseStorageUrl } from './core/storage/blob-store.ts';

const port = z.coerce.number().int().min(0).max(65535);
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

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
  LAKEPORT_ADMIN_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
  LAKEPORT_MASTER_KEY: optionalString,
  LAKEPORT_ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(86_400).default(900),
  LAKEPORT_REFRESH_TOKEN_TTL_DAYS: z.coerce.number().int().min(1).max(365).default(30),
  LAKEPORT_JOB_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(86_400).default(300),
  LAKEPORT_JOB_WORKERS: z.coerce.number().int().min(0).max(64).default(4),
  LAKEPORT_JOB_MEMORY_LIMIT: z.string().regex(/^\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i, 'a size such as 512MB or 2GB').default('1GB'),
  LAKEPORT_JOB_THREADS: z.coerce.number().int().min(1).max(64).default(2),
  LAKEPORT_EXTERNAL_S3_ENDPOINT: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  LAKEPORT_EXTERNAL_READ_MAX_BYTES: optionalString.pipe(z.coerce.number<string | undefined>().int().min(1).optional()),
  LAKEPORT_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

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
  readonly adminToken: string | undefined;
  readonly masterKey: string | undefined;
  readonly accessTokenTtlSeconds: number;
  readonly refreshTokenTtlDays: number;
  readonly logLevel: string;
  /** Query jobs: time limit, jobs run at once per process (0: this process runs none), and each job's DuckDB limits. */
  readonly jobTimeoutSeconds: number;
  readonly jobWorkers: number;
  readonly jobMemoryLimit: string;
  readonly jobThreads: number;
  /**
   * READ_* of private storage: an S3-compatible endpoint for s3:// URLs (`LAKEPORT_EXTERNAL_S3_ENDPOINT`,
   * path-style; unset → Amazon S3), and the bytes one job may copy (`LAKEPORT_EXTERNAL_READ_MAX_BYTES`, default 1 GiB).
   */
  readonly externalS3Endpoint: string | undefined;
  readonly externalReadMaxBytes: number;
}

export class ConfigError extends Error {}

/** Parses the environment once; nothing else in the code base reads process.env. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${lines.join('; ')}`);
  }
  const e = parsed.data;
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
    adminToken: e.LAKEPORT_ADMIN_TOKEN,
    masterKey: e.LAKEPORT_MASTER_KEY,
    accessTokenTtlSeconds: e.LAKEPORT_ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenTtlDays: e.LAKEPORT_REFRESH_TOKEN_TTL_DAYS,
    logLevel: e.LAKEPORT_LOG_LEVEL,
    jobTimeoutSeconds: e.LAKEPORT_JOB_TIMEOUT_SECONDS,
    jobWorkers: e.LAKEPORT_JOB_WORKERS,
    jobMemoryLimit: e.LAKEPORT_JOB_MEMORY_LIMIT,
    jobThreads: e.LAKEPORT_JOB_THREADS,
    externalS3Endpoint: e.LAKEPORT_EXTERNAL_S3_ENDPOINT,
    externalReadMaxBytes: e.LAKEPORT_EXTERNAL_READ_MAX_BYTES ?? 1024 ** 3,
  });
}
