import type { Authorizer, Principal } from '../../../core/authz/index.ts';
import type { SecretType } from '../../../core/db/index.ts';
import type { FunctionRef } from '../../../core/engine/index.ts';
import { checkSecretFits, ExternalReadRefusal, parseExternalRead, type ExternalRead } from './reads.ts';

/** What a secret says about what it may read (its type and SCOPE), without counting a use. */
export interface SecretScopes {
  describe(workspace: string, name: string): Promise<{ type: SecretType; scope: string | undefined } | undefined>;
}

/** The role a caller needs on the whole workspace (`ws.*`) to read with one of its secrets. */
export const SECRET_USE_ROLE = 'reader' as const;

/**
 * Plans the READ_* calls of a statement for a caller, fetching nothing: each call's shape, its
 * secret (which must exist in the named workspace, and the caller must hold at least reader on the
 * whole workspace, `ws.*`), and each URL against the secret's type and SCOPE. A secret that does not
 * exist and one the caller may not use give the same SECRET_NOT_FOUND, so names cannot be probed.
 */
export class ExternalReadPlanner {
  constructor(
    private readonly secrets: SecretScopes,
    private readonly authz: Authorizer,
  ) {}

  /** Throws ExternalReadRefusal. */
  async plan(caller: Principal, calls: FunctionRef[]): Promise<ExternalRead[]> {
    const reads = calls.map(parseExternalRead);
    const known = new Map<string, { type: SecretType; scope: string | undefined } | undefined>();
    for (const read of reads) {
      const { workspace, name, label } = read.secret;
      if (!known.has(label)) {
        const usable = await this.authz.can(caller, SECRET_USE_ROLE, { workspace });
        known.set(label, usable ? await this.secrets.describe(workspace, name) : undefined);
      }
      const secret = known.get(label);
      if (!secret) {
        throw new ExternalReadRefusal(
          'SECRET_NOT_FOUND',
          `Secret ${label} does not exist, or you may not use it (reading with a secret takes the ${SECRET_USE_ROLE} role on ${workspace}.*)`,
          read.secret.position,
        );
      }
      checkSecretFits(read, secret);
    }
    return reads;
  }
}
