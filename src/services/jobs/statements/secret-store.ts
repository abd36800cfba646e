import { sql, type Selectable } from 'kysely';
import { DataKeys, type Sealer } from '../../../core/crypto/index.ts';
import type { Db, SecretsTable, SecretType } from '../../../core/db/index.ts';

export type SecretRow = Selectable<SecretsTable>;

/** What a secret row may say about itself: never its ciphertext, never its values. */
export type SecretMetadata = Omit<SecretRow, 'ciphertext'>;

export type StoreOutcome =
  | { outcome: 'created'; secret: SecretMetadata }
  | { outcome: 'replaced'; secret: SecretMetadata }
  | { outcome: 'unchanged'; secret: SecretMetadata }
  | { outcome: 'exists'; secret: SecretMetadata }
  | { outcome: 'type_mismatch'; secret: SecretMetadata };

const METADATA = ['workspace', 'name', 'type', 'billing_account', 'created_by', 'created_at', 'replaced_by', 'replaced_at', 'last_used_at', 'use_count'] as const;

/**
 * Encrypted secrets. Values are sealed (AES-256-GCM, `Sealer`) with the data key of the workspace's
 * billing account (core/crypto's DataKeys). The associated data binds a ciphertext to its
 * workspace, name and type, and a data key to its account, so neither can be moved to another row. Values exist in clear only in memory, while sealing and
 * (for reads through READ_*) while opening.
 */
export class SecretStore {
  private readonly dataKeys: DataKeys;

  constructor(
    private readonly db: Db,
    master: Sealer,
  ) {
    this.dataKeys = new DataKeys(db, master);
  }

  private static valueContext(workspace: string, name: string, type: SecretType) {
    return `lakeport/secret/v1/${workspace}/${name}/${type}`;
  }

  async find(workspace: string, name: string): Promise<SecretMetadata | undefined> {
    return this.db.kysely.selectFrom('secrets').select(METADATA).where('workspace', '=', workspace).where('name', '=', name).executeTakeFirst();
  }

  /**
   * Stores a secret in one statement, so it is atomic under concurrency:
   * - `create`: inserts, or reports `exists`;
   * - `if_not_exists`: inserts, or reports `unchanged` and leaves the existing one untouched;
   * - `replace`: inserts, or replaces the values of an existing one of the same type (keeping
   *   created_by and created_at, resetting last_used_at and use_count), or reports `type_mismatch`.
   */
  async put(
    mode: 'create' | 'if_not_exists' | 'replace',
    input: { workspace: string; name: string; type: SecretType; billingAccount: string; values: Record<string, string>; by: string },
  ): Promise<StoreOutcome> {
    const sealer = await this.dataKeys.forAccount(input.billingAccount);
    const ciphertext = sealer.seal(JSON.stringify(input.values), SecretStore.valueContext(input.workspace, input.name, input.type));
    const row = { workspace: input.workspace, name: input.name, type: input.type, billing_account: input.billingAccount, ciphertext, created_by: input.by };
    if (mode === 'replace') {
      // xmax = 0 only for a row this statement inserted (PostgreSQL and PGlite alike).
      const written = await this.db.kysely
        .insertInto('secrets')
        .values(row)
        .onConflict((oc) =>
          oc
            .columns(['workspace', 'name'])
            .doUpdateSet({
              ciphertext: (eb) => eb.ref('excluded.ciphertext'),
              billing_account: (eb) => eb.ref('excluded.billing_account'),
              replaced_by: input.by,
              replaced_at: sql<Date>`now()`,
              last_used_at: null,
              use_count: 0,
            })
            .where('secrets.type', '=', input.type),
        )
        .returning([...METADATA, sql<boolean>`(xmax = 0)`.as('inserted')])
        .executeTakeFirst();
      if (written) {
        const { inserted, ...secret } = written;
        return { outcome: inserted ? 'created' : 'replaced', secret };
      }
      const existing = await this.find(input.workspace, input.name);
      if (!existing) return this.put(mode, input); // dropped meanwhile: try again
      return { outcome: 'type_mismatch', secret: existing };
    }
    const inserted = await this.db.kysely
      .insertInto('secrets')
      .values(row)
      .onConflict((oc) => oc.columns(['workspace', 'name']).doNothing())
      .returning(METADATA)
      .executeTakeFirst();
    if (inserted) return { outcome: 'created', secret: inserted };
    const existing = await this.find(input.workspace, input.name);
    if (!existing) return this.put(mode, input);
    return { outcome: mode === 'create' ? 'exists' : 'unchanged', secret: existing };
  }

  /**
   * What a secret may read: its type and SCOPE, decrypted but not counted as a use (the check
   * endpoint and job planning ask this before anything is fetched). Never the other values.
   */
  async describe(workspace: string, name: string): Promise<{ type: SecretType; scope: string | undefined } | undefined> {
    const row = await this.db.kysely
      .selectFrom('secrets')
      .select(['type', 'billing_account', 'ciphertext'])
      .where('workspace', '=', workspace)
      .where('name', '=', name)
      .executeTakeFirst();
    if (!row) return undefined;
    const sealer = await this.dataKeys.forAccount(row.billing_account);
    const values = JSON.parse(sealer.open(row.ciphertext, SecretStore.valueContext(workspace, name, row.type)).toString('utf8')) as Record<string, string>;
    return { type: row.type, scope: values.SCOPE };
  }

  /**
   * The values of a secret, decrypted, counting the use (last_used_at, use_count). For the READ_*
   * table functions; nothing returns them to a user.
   */
  async use(workspace: string, name: string): Promise<{ type: SecretType; values: Record<string, string> } | undefined> {
    const row = await this.db.kysely
      .updateTable('secrets')
      .set({ last_used_at: sql<Date>`now()`, use_count: sql<number>`use_count + 1` })
      .where('workspace', '=', workspace)
      .where('name', '=', name)
      .returning(['type', 'billing_account', 'ciphertext'])
      .executeTakeFirst();
    if (!row) return undefined;
    const sealer = await this.dataKeys.forAccount(row.billing_account);
    const plain = sealer.open(row.ciphertext, SecretStore.valueContext(workspace, name, row.type));
    return { type: row.type, values: JSON.parse(plain.toString('utf8')) as Record<string, string> };
  }
}
