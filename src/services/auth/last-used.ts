import type { Logger } from '../../core/logger.ts';
import type { AuthRepo } from './repo.ts';

/** How often the last-used times gathered in memory are written (docs/auth.md, "Performance and caching"). */
export const LAST_USED_FLUSH_MS = 5_000;

/**
 * `last_used_at` of credentials and refresh tokens, written in batches: an exchange only notes the
 * time here, and every LAST_USED_FLUSH_MS one statement per table writes what was noted (a time
 * never moves back, whichever server wrote last). `close` writes the rest when the app stops; a
 * write that fails is retried with the next one.
 */
export class LastUsedTimes {
  private credentials = new Map<string, number>();
  private refreshTokens = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly repo: AuthRepo,
    private readonly log?: Logger,
    intervalMs = LAST_USED_FLUSH_MS,
  ) {
    this.timer = setInterval(() => void this.flush().catch((error: unknown) => this.log?.warn({ err: error }, 'writing last-used times failed; retrying later')), intervalMs);
    this.timer.unref();
  }

  credential(credentialId: string): void {
    this.credentials.set(credentialId, Date.now());
  }

  refreshToken(tokenHash: string): void {
    this.refreshTokens.set(tokenHash, Date.now());
  }

  /** Writes what was noted so far (after any write under way). */
  flush(): Promise<void> {
    this.writing = this.writing.catch(() => undefined).then(() => this.write());
    return this.writing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async write(): Promise<void> {
    const credentials = this.credentials;
    const refreshTokens = this.refreshTokens;
    this.credentials = new Map();
    this.refreshTokens = new Map();
    try {
      if (credentials.size > 0) await this.repo.touchCredentials([...credentials]);
      credentials.clear();
      if (refreshTokens.size > 0) await this.repo.touchRefreshTokens([...refreshTokens]);
      refreshTokens.clear();
    } finally {
      // Whatever was not written goes with the next write (a later use noted meanwhile wins).
      for (const [id, at] of credentials) if (!((this.credentials.get(id) ?? 0) > at)) this.credentials.set(id, at);
      for (const [hash, at] of refreshTokens) if (!((this.refreshTokens.get(hash) ?? 0) > at)) this.refreshTokens.set(hash, at);
    }
  }
}
