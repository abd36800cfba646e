import path from 'node:path';
import { z } from 'zod';

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
  LAKEPORT_STORAGE_URL: optionalString,
  S3_ENDPOINT: optionalString,
  LAKEPORT_ADMIN_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
  LAKEPORT_MASTER_KEY: optionalString,
  LAKEPORT_ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(86_400).default(900),
  LAKEPORT_REFRESH_TOKEN_TTL_DAYS: z.coerce.number().int().min(1).max(365).default(30),
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
  readonly adminToken: string | undefined;
  readonly masterKey: string | undefined;
  readonly accessTokenTtlSeconds: number;
  readonly refreshTokenTtlDays: number;
  readonly logLevel: string;
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
    adminToken: e.LAKEPORT_ADMIN_TOKEN,
    masterKey: e.LAKEPORT_MASTER_KEY,
    accessTokenTtlSeconds: e.LAKEPORT_ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenTtlDays: e.LAKEPORT_REFRESH_TOKEN_TTL_DAYS,
    logLevel: e.LAKEPORT_LOG_LEVEL,
  });
}
