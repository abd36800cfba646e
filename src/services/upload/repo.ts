import type { Insertable, Selectable } from 'kysely';
import type { Db, UploadContractsTable, UploadWritePartsTable, UploadWritesTable } from '../../core/db/index.ts';

export type ContractRow = Selectable<UploadContractsTable>;
export type WriteRow = Selectable<UploadWritesTable>;
export type WritePartRow = Selectable<UploadWritePartsTable>;

/** Parts per INSERT, well under PostgreSQL's 65535 bound parameters. */
const PART_BATCH = 1000;

export class UploadRepo {
  constructor(private readonly db: Db) {}


  async insertContract(row: Insertable<UploadContractsTable>): Promise<ContractRow> {
    return this.db.kysely.insertInto('upload_contracts').values(row).returningAll().executeTakeFirstOrThrow();
  }

  getContract(contractId: string): Promise<ContractRow | undefined> {
    return this.db.kysely.selectFrom('upload_contracts').selectAll().where('contract_id', '=', contractId).executeTakeFirst();
  }

  async updateContract(contractId: string, patch: Partial<Insertable<UploadContractsTable>>): Promise<ContractRow> {
    return this.db.kysely
      .updateTable('upload_contracts')
      .set({ ...patch, updated_at: new Date() })
      .where('contract_id', '=', contractId)
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  async deleteContract(contractId: string): Promise<void> {
    await this.db.kysely.deleteFrom('upload_contracts').where('contract_id', '=', contractId).execute();
  }

  writes(contractId: string): Promise<WriteRow[]> {
    return this.db.kysely.selectFrom('upload_writes').selectAll().where('contract_id', '=', contractId).orderBy('created_at').execute();
  }

  /** Every part of every write of a contract: writes in the order they were made, each write's parts in the file's order. */
  writeParts(contractId: string): Promise<(WritePartRow & { file_name: string })[]> {
    return this.db.kysely
      .selectFrom('upload_write_parts as p')
      .innerJoin('upload_writes as w', 'w.write_id', 'p.write_id')
      .selectAll('p')
      .select('w.file_name')
      .where('w.contract_id', '=', contractId)
      .orderBy('w.created_at')
      .orderBy('w.write_id')
      .orderBy('p.part')
      .execute();
  }

  /**
   * Records a write and its parts in one transaction, replacing an earlier write of the same file;
   * returns the replaced write's staged paths.
   */
  async putWrite(row: Insertable<UploadWritesTable>, parts: Insertable<UploadWritePartsTable>[]): Promise<string[]> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const old = await trx.selectFrom('upload_writes').select('write_id').where('contract_id', '=', row.contract_id).where('file_name', '=', row.file_name).executeTakeFirst();
      let replaced: string[] = [];
      if (old) {
        replaced = (await trx.selectFrom('upload_write_parts').select('path').where('write_id', '=', old.write_id).execute()).map((p) => p.path);
        await trx.deleteFrom('upload_writes').where('write_id', '=', old.write_id).execute(); // its parts go with it
      }
      await trx.insertInto('upload_writes').values(row).execute();
      for (let i = 0; i < parts.length; i += PART_BATCH) await trx.insertInto('upload_write_parts').values(parts.slice(i, i + PART_BATCH)).execute();
      return replaced;
    });
  }

  async deleteWrites(contractId: string): Promise<void> {
    await this.db.kysely.deleteFrom('upload_writes').where('contract_id', '=', contractId).execute();
  }

  /** Takes an idempotency key for a commit; false when the key is already there. */
  async insertCommitKey(owner: string, key: string, contractId: string): Promise<boolean> {
    const inserted = await this.db.kysely
      .insertInto('upload_commits')
      .values({ owner, idempotency_key: key, contract_id: contractId, state: 'running' })
      .onConflict((oc) => oc.columns(['owner', 'idempotency_key']).doNothing())
      .returning('state')
      .executeTakeFirst();
    return inserted !== undefined;
  }

  getCommitKey(owner: string, key: string) {
    return this.db.kysely.selectFrom('upload_commits').selectAll().where('owner', '=', owner).where('idempotency_key', '=', key).executeTakeFirstOrThrow();
  }

  async restartCommitKey(owner: string, key: string): Promise<void> {
    await this.db.kysely.updateTable('upload_commits').set({ started_at: new Date() }).where('owner', '=', owner).where('idempotency_key', '=', key).execute();
  }

  /** Frees a key whose commit failed, so the same request may be retried. */
  async releaseCommitKey(owner: string, key: string): Promise<void> {
    await this.db.kysely.deleteFrom('upload_commits').where('owner', '=', owner).where('idempotency_key', '=', key).where('state', '=', 'running').execute();
  }

  expiredContracts(now: Date): Promise<ContractRow[]> {
    return this.db.kysely.selectFrom('upload_contracts').selectAll().where('expires_at', '<', now).where('state', '!=', 'committed').limit(100).execute();
  }
}
