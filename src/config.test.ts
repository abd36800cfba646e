import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';

describe('loadConfig', () => {
  it('applies the runtime contract defaults', () => {
    const c = loadConfig({});
    expect(c.host).toBe('127.0.0.1');
    expect(c.port).toBe(8080);
    expect(c.publicUrl).toBeUndefined();
    expect(c.databaseUrl).toBeUndefined();
    expect(c.dataDir.endsWith('.lakeport')).toBe(true);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('reads every variable', () => {
    const c = loadConfig({
      HOST: '0.0.0.0',
      PORT: '9000',
      LAKEPORT_PUBLIC_URL: 'https://lake.example.com/',
      DATABASE_URL: 'postgres://u@h/db',
      LAKEPORT_ADMIN_TOKEN: 'a-long-enough-admin-token',
    });
    expect(c).toMatchObject({ host: '0.0.0.0', port: 9000, publicUrl: 'https://lake.example.com', databaseUrl: 'postgres://u@h/db' });
  });

  it('reads the settings of reads from private storage', () => {
    expect(loadConfig({})).toMatchObject({ externalS3Endpoint: undefined, externalReadMaxBytes: 1024 ** 3 });
    expect(loadConfig({ LAKEPORT_EXTERNAL_S3_ENDPOINT: 'http://127.0.0.1:9000', LAKEPORT_EXTERNAL_READ_MAX_BYTES: '1048576' })).toMatchObject({
      externalS3Endpoint: 'http://127.0.0.1:9000',
      externalReadMaxBytes: 1048576,
    });
    expect(() => loadConfig({ LAKEPORT_EXTERNAL_S3_ENDPOINT: 'ftp://x' })).toThrow(ConfigError);
    expect(() => loadConfig({ LAKEPORT_EXTERNAL_READ_MAX_BYTES: '0' })).toThrow(ConfigError);
    expect(loadConfig({ LAKEPORT_EXTERNAL_READ_MAX_BYTES: '' }).externalReadMaxBytes).toBe(1024 ** 3);
  });

  it('reads the compaction settings (LAKEPORT_COMPACTION_*)', () => {
    expect(loadConfig({}).compaction).toEqual({ automatic: true, minSmallFiles: 32, smallFileBytes: 8 * 2 ** 20, targetFileBytes: 128 * 2 ** 20, delayMs: 5000 });
    expect(
      loadConfig({ LAKEPORT_COMPACTION: 'off', LAKEPORT_COMPACTION_MIN_FILES: '100', LAKEPORT_COMPACTION_SMALL_FILE: '1MB', LAKEPORT_COMPACTION_TARGET_FILE: '1GiB', LAKEPORT_COMPACTION_DELAY_SECONDS: '0.5' }).compaction,
    ).toEqual({ automatic: false, minSmallFiles: 100, smallFileBytes: 1e6, targetFileBytes: 2 ** 30, delayMs: 500 });
    for (const bad of [{ LAKEPORT_COMPACTION: 'yes' }, { LAKEPORT_COMPACTION_MIN_FILES: '1' }, { LAKEPORT_COMPACTION_SMALL_FILE: 'big' }, { LAKEPORT_COMPACTION_DELAY_SECONDS: '-1' }, { LAKEPORT_COMPACTION_TARGET_FILE: '1MiB' }]) {
      expect(() => loadConfig(bad), JSON.stringify(bad)).toThrow(ConfigError);
    }
  });

  it('reads where the Iceberg catalog says files are (LAKEPORT_ICEBERG_LOCATIONS)', () => {
    expect(loadConfig({}).icebergLocations).toBe('http');
    expect(loadConfig({ LAKEPORT_ICEBERG_LOCATIONS: 'storage' }).icebergLocations).toBe('storage');
    expect(() => loadConfig({ LAKEPORT_ICEBERG_LOCATIONS: 's3' })).toThrow(ConfigError);
  });

  it('reads the payment processor settings (sandbox unless told; stripe needs its key, never echoed)', () => {
    expect(loadConfig({}).payments).toEqual({ processor: 'sandbox', stripe: { secretKey: undefined, apiBase: 'https://api.stripe.com', timeoutMs: 20_000 } });
    const stripe = loadConfig({
      LAKEPORT_PAYMENTS_PROCESSOR: 'stripe',
      LAKEPORT_STRIPE_SECRET_KEY: 'sk_test_abc123',
      LAKEPORT_STRIPE_API_BASE: 'http://127.0.0.1:12111',
      LAKEPORT_STRIPE_TIMEOUT_MS: '500',
    });
    expect(stripe.payments).toEqual({ processor: 'stripe', stripe: { secretKey: 'sk_test_abc123', apiBase: 'http://127.0.0.1:12111', timeoutMs: 500 } });
    expect(() => loadConfig({ LAKEPORT_PAYMENTS_PROCESSOR: 'stripe' })).toThrow(/LAKEPORT_STRIPE_SECRET_KEY: required/);
    expect(() => loadConfig({ LAKEPORT_PAYMENTS_PROCESSOR: 'paypal' })).toThrow(ConfigError);
    expect(() => loadConfig({ LAKEPORT_STRIPE_SECRET_KEY: 'pk_test_secretvalue99' })).toThrow(ConfigError);
    try {
      loadConfig({ LAKEPORT_STRIPE_SECRET_KEY: 'sk_test_has spaces_secretvalue99' });
    } catch (error) {
      expect((error as Error).message).not.toContain('secretvalue99');
    }
  });

  it('reads the external catalogs settings: 10 s, private networks refused unless allowed', () => {
    expect(loadConfig({}).catalogs).toEqual({ timeoutMs: 10_000, allowPrivateNetworks: false });
    expect(loadConfig({ LAKEPORT_CATALOG_TIMEOUT_SECONDS: '2.5', LAKEPORT_CATALOG_ALLOW_PRIVATE_NETWORKS: 'TRUE' }).catalogs).toEqual({ timeoutMs: 2500, allowPrivateNetworks: true });
    expect(() => loadConfig({ LAKEPORT_CATALOG_ALLOW_PRIVATE_NETWORKS: 'yes' })).toThrow(/LAKEPORT_CATALOG_ALLOW_PRIVATE_NETWORKS/);
    expect(() => loadConfig({ LAKEPORT_CATALOG_TIMEOUT_SECONDS: '0' })).toThrow(/LAKEPORT_CATALOG_TIMEOUT_SECONDS/);
  });

  it('reads up to two identity providers (LAKEPORT_IDP_A_*, LAKEPORT_IDP_B_*); a partial one is refused, secrets never echoed', () => {
    expect(loadConfig({})).toMatchObject({ identityProviders: [], loginTtlSeconds: 600, idpTimeoutSeconds: 10 });
    expect(loadConfig({ LAKEPORT_IDP_TIMEOUT_SECONDS: '3' }).idpTimeoutSeconds).toBe(3);
    const c = loadConfig({
      LAKEPORT_IDP_A_ISSUER: 'https://accounts.google.com',
      LAKEPORT_IDP_A_CLIENT_ID: 'client-a',
      LAKEPORT_IDP_A_CLIENT_SECRET: 'secret-a-value99',
      LAKEPORT_IDP_A_NAME: 'Google Workspace',
      LAKEPORT_IDP_B_ISSUER: 'http://127.0.0.1:9999',
      LAKEPORT_IDP_B_CLIENT_ID: 'client-b',
      LAKEPORT_IDP_B_CLIENT_SECRET: 'secret-b',
      LAKEPORT_LOGIN_TTL_SECONDS: '120',
    });
    expect(c.identityProviders).toEqual([
      { id: 'idp_a', issuer: 'https://accounts.google.com', clientId: 'client-a', clientSecret: 'secret-a-value99', name: 'Google Workspace' },
      { id: 'idp_b', issuer: 'http://127.0.0.1:9999', clientId: 'client-b', clientSecret: 'secret-b', name: '127.0.0.1' },
    ]);
    expect(c.loginTtlSeconds).toBe(120);
    expect(() => loadConfig({ LAKEPORT_IDP_A_ISSUER: 'https://idp.example', LAKEPORT_IDP_A_CLIENT_ID: 'x' })).toThrow(/LAKEPORT_IDP_A_CLIENT_SECRET: required/);
    expect(() => loadConfig({ LAKEPORT_IDP_B_CLIENT_ID: 'x' })).toThrow(/LAKEPORT_IDP_B_ISSUER: required/);
    // http:// only on loopback.
    expect(() => loadConfig({ LAKEPORT_IDP_A_ISSUER: 'http://idp.example', LAKEPORT_IDP_A_CLIENT_ID: 'x', LAKEPORT_IDP_A_CLIENT_SECRET: 'y' })).toThrow(/https/);
    try {
      loadConfig({ LAKEPORT_IDP_A_ISSUER: 'not a url', LAKEPORT_IDP_A_CLIENT_ID: 'x', LAKEPORT_IDP_A_CLIENT_SECRET: 'secretvalue99' });
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).not.toContain('secretvalue99');
    }
  });

  it('reads the plans and their service-account quotas (LAKEPORT_PLANS, LAKEPORT_DEFAULT_PLAN)', () => {
    expect(loadConfig({}).plans).toEqual({ quotas: { free: 2, team: 25, enterprise: 500 }, defaultPlan: 'free' });
    expect(loadConfig({ LAKEPORT_PLANS: 'starter=1, pro=50', LAKEPORT_DEFAULT_PLAN: 'starter' }).plans).toEqual({ quotas: { starter: 1, pro: 50 }, defaultPlan: 'starter' });
    for (const plans of ['free', 'free=-1', 'Free=2', 'free=2,free=3', '', 'free=2000000']) {
      expect(() => loadConfig({ LAKEPORT_PLANS: plans }), plans).toThrow(ConfigError);
    }
    expect(() => loadConfig({ LAKEPORT_PLANS: 'team=25' })).toThrow(/LAKEPORT_DEFAULT_PLAN/);
  });

  it('reads LAKEPORT_TRUST_PROXY (the source address that throttling counts by)', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ LAKEPORT_TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(loadConfig({ LAKEPORT_TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(() => loadConfig({ LAKEPORT_TRUST_PROXY: '2' })).toThrow(ConfigError); // Fastify 5 ignores hop counts
    expect(loadConfig({ LAKEPORT_TRUST_PROXY: '10.0.0.0/8, loopback,2001:db8::1' }).trustProxy).toEqual(['10.0.0.0/8', 'loopback', '2001:db8::1']);
    expect(() => loadConfig({ LAKEPORT_TRUST_PROXY: 'proxy.example.com' })).toThrow(ConfigError);
    expect(() => loadConfig({ LAKEPORT_TRUST_PROXY: '10.0.0.0/33' })).toThrow(ConfigError);
  });

  it('reads the resolvers, timeout and tries of domain verification (LAKEPORT_DNS_*)', () => {
    expect(loadConfig({})).toMatchObject({ dnsServers: undefined, dnsTimeoutMs: 2000, dnsTries: 2 });
    expect(loadConfig({ LAKEPORT_DNS_SERVERS: '127.0.0.1:5353, [::1]:53,9.9.9.9', LAKEPORT_DNS_TIMEOUT_MS: '500', LAKEPORT_DNS_TRIES: '1' })).toMatchObject({
      dnsServers: ['127.0.0.1:5353', '[::1]:53', '9.9.9.9'],
      dnsTimeoutMs: 500,
      dnsTries: 1,
    });
    expect(() => loadConfig({ LAKEPORT_DNS_SERVERS: 'dns.example.com' })).toThrow(/LAKEPORT_DNS_SERVERS/);
    expect(() => loadConfig({ LAKEPORT_DNS_TRIES: '0' })).toThrow(ConfigError);
  });

  it('treats empty values as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', LAKEPORT_PUBLIC_URL: ' ' }).databaseUrl).toBeUndefined();
  });

  it.each([{ PORT: 'x' }, { PORT: '70000' }, { DATABASE_URL: 'mysql://x' }, { LAKEPORT_ADMIN_TOKEN: 'short' }, { LAKEPORT_PUBLIC_URL: 'not a url' }])(
    'refuses %j with a readable message',
    (env) => {
      expect(() => loadConfig(env)).toThrow(ConfigError);
    },
  );
});
