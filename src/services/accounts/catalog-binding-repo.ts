import type { Kysely, Selectable } from 'kysely';
import type { CatalogSyncSummary, Database, WorkspaceCatalogBindingsTable } from '../../core/db/index.ts';
import { accountsError } from './errors.ts';

export type CatalogBindingRow = Selectable<WorkspaceCatalogBindingsTable>;

/** What a write stores (the credential already sealed). */
export interface CatalogBindingWrite {
  workspace: string;
  billing_account: string;
  kind: string;
  config: Record<string, string>;
  sealed_auth: string | null;
  auth_redacted: Record<string, string> | null;
  preserve_sql_case: boolean;
  updated_by: string;
}

/** SQL of workspace_catalog_bindings. Writes take the executor they run on: the catalog's transaction when stubs change with them. */
export class CatalogBindingRepo {
  constructor(private readonly db: Kysely<Database>) {}

  find(workspace: string): Promise<CatalogBindingRow | undefined> {
    return this.db.selectFrom('workspace_catalog_bindings').selectAll().where('workspace', '=', workspace).executeTakeFirst();
  }

  /** Inserts or replaces the binding (its version goes up by one); the stored row. */
  write(trx: Kysely<Database>, row: CatalogBindingWrite): Promise<CatalogBindingRow> {
    const values = { ...row, config: JSON.stringify(row.config), auth_redacted: row.auth_redacted === null ? null : JSON.stringify(row.auth_redacted), updated_at: new Date() };
    const { workspace: _workspace, ...update } = values;
    return trx
      .insertInto('workspace_catalog_bindings')
      .values(values)
      .onConflict((oc) => oc.column('workspace').doUpdateSet((eb) => ({ ...update, version: eb('workspace_catalog_bindings.version', '+', 1), last_sync: null })))
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /** Inserts the binding unless the workspace has one; the row either way. */
  async writeIfAbsent(trx: Kysely<Database>, row: CatalogBindingWrite): Promise<CatalogBindingRow> {
    const values = { ...row, config: JSON.stringify(row.config), auth_redacted: row.auth_redacted === null ? null : JSON.stringify(row.auth_redacted) };
    const inserted = await trx.insertInto('workspace_catalog_bindings').values(values).onConflict((oc) => oc.column('workspace').doNothing()).returningAll().executeTakeFirst();
    return inserted ?? (await trx.selectFrom('workspace_catalog_bindings').selectAll().where('workspace', '=', row.workspace).executeTakeFirstOrThrow());
  }

  async remove(trx: Kysely<Database>, workspace: string): Promise<void> {
    await trx.deleteFrom('workspace_catalog_bindings').where('workspace', '=', workspace).execute();
  }

  /**
   * Records a sync's summary, if the binding is still the one that was listed (same version): 409
   * CATALOG_BINDING_CHANGED otherwise, and the caller's transaction (the stubs) is undone.
   */
  async recordSync(trx: Kysely<Database>, workspace: string, version: number, summary: CatalogSyncSummary): Promise<void> {
    const updated = await trx
      .updateTable('workspace_catalog_bindings')
      .set({ last_sync: JSON.stringify(summary) })
      .where('workspace', '=', workspace)
      .where('version', '=', version)
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) !== 1) {
      throw accountsError('CATALOG_BINDING_CHANGED', `The catalog binding of '${workspace}' changed or was removed while it was being synced; nothing was stored: sync again`);
    }
  }
}
