import type { Insertable, Kysely, Selectable } from 'kysely';
import type { ContractState, Database, Db, UploadContractsTable, UploadWritePartsTable, UploadWritesTable } from '../../core/db/index.ts';
import type { AppError } from '../../core/errors/index.ts';
import { KEPT_READ_TTL_MS, KeptReads } from '../../core/kept.ts';
import { uploadError } from './errors.ts';

export type ContractRow = Selectable<UploadContractsTable>;
export type WriteRow = Selectable<UploadWritesTable>;
export type WritePartRow = Selectable<UploadWritePartsTable>;

/** Parts per INSERT, well under PostgreSQL's 65535 bound parameters. */
const PART_BATCH = 1000;

type Executor = Kysely<Database>;

function committed(contractId: string): AppError {
  return uploadError('CONTRACT_COMMITTED', `Contract ${contractId} is committed; negotiate a new one`);
}

/**
 * Contracts and their writes. A committed contract changes no more: its record keeps `committed`, and
 * its writes are the dataset's files. Whatever changes a contract's writes locks the contract's row
 * first (`lockState`), as the commit does in its catalog transaction, so the two never interleave.
 */
export class UploadRepo {
  /**
   * Committed contracts with their writes, as GET shows them: they change no more, so they are kept
   * until this process writes contracts, or for KEPT_READ_TTL_MS (another server may abandon one).
   */
  private readonly committed: KeptReads<string, { row: ContractRow | undefined; writes: WriteRow[] }>;

  constructor(private readonly db: Db) {
    this.committed = new KeptReads({ ttlMs: KEPT_READ_TTL_MS, max: 1_000, tables: { writes: db.writes, names: ['upload_contracts', 'upload_writes'] } });
  }


  async insertContract(row: Insertable<UploadContractsTable>): Promise<ContractRow> {
    return this.db.kysely.insertInto('upload_contracts').values(row).returningAll().executeTakeFirstOrThrow();
  }

  /** A contract and its writes (kept once committed). */
  contractWithWrites(contractId: string): Promise<{ row: ContractRow | undefined; writes: WriteRow[] }> {
    return this.committed.get(
      contractId,
      async () => {
        const row = await this.getContract(contractId);
        return { row, writes: row ? await this.writes(contractId) : [] };
      },
      ({ row }) => row?.state === 'committed',
    );
  }

  getContract(contractId: string): Promise<ContractRow | undefined> {
    return this.db.kysely.selectFrom('upload_contracts').selectAll().where('contract_id', '=', contractId).executeTakeFirst();
  }

  /** Changes a contract that is not committed (409 CONTRACT_COMMITTED when a commit got there first). */
  async updateContract(contractId: string, patch: Partial<Insertable<UploadContractsTable>>): Promise<ContractRow> {
    const row = await this.db.kysely
      .updateTable('upload_contracts')
      .set({ ...patch, updated_at: new Date() })
      .where('contract_id', '=', contractId)
      .where('state', '!=', 'committed')
      .returningAll()
      .executeTakeFirst();
    if (!row) throw committed(contractId);
    return row;
  }

  /** Marks a contract stale, unless it is committed (a commit that found it current stays committed). */
  async markStale(contractId: string): Promise<void> {
    await this.db.kysely.updateTable('upload_contracts').set({ state: 'stale', updated_at: new Date() }).where('contract_id', '=', contractId).where('state', '!=', 'committed').execute();
  }

  /** Locks the contract's row for the rest of the transaction; its state, or undefined when it is gone. */
  async lockState(trx: Executor, contractId: string): Promise<ContractState | undefined> {
    const row = await trx.selectFrom('upload_contracts').select('state').where('contract_id', '=', contractId).forUpdate().executeTakeFirst();
    return row?.state;
  }

  /** Locks the contract for a change of its writes: 404 when it is gone, 409 when it is committed. */
  private async lockOpen(trx: Executor, contractId: string): Promise<void> {
    const state = await this.lockState(trx, contractId);
    if (state === undefined) throw uploadError('CONTRACT_NOT_FOUND', `No contract ${contractId}`);
    if (state === 'committed') throw committed(contractId);
  }

  async deleteContract(contractId: string): Promise<void> {
    await this.db.kysely.deleteFrom('upload_contracts').where('contract_id', '=', contractId).execute();
  }

  writes(contractId: string): Promise<WriteRow[]> {
    return this.db.kysely.selectFrom('upload_writes').selectAll().where('contract_id', '=', contractId).orderBy('created_at').execute();
  }

  /** Every part of every write of a contract: writes in the order they were made, each write's parts in the file's order. */
  writeParts(contractId: string, q: Executor = this.db.kysely): Promise<(WritePartRow & { file_name: string })[]> {
    return q
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
   * returns the replaced write's staged paths (its parts and its rejects file).
   */
  async putWrite(row: Insertable<UploadWritesTable>, parts: Insertable<UploadWritePartsTable>[]): Promise<string[]> {
    return this.db.kysely.transaction().execute(async (trx) => {
      await this.lockOpen(trx, row.contract_id);
      const old = await trx.selectFrom('upload_writes').select(['write_id', 'rejects_path']).where('contract_id', '=', row.contract_id).where('file_name', '=', row.file_name).executeTakeFirst();
      let replaced: string[] = [];
      if (old) {
        replaced = (await trx.selectFrom('upload_write_parts').select('path').where('write_id', '=', old.write_id).execute()).map((p) => p.path);
        if (old.rejects_path) replaced.push(old.rejects_path);
        await trx.deleteFrom('upload_writes').where('write_id', '=', old.write_id).execute(); // its parts go with it
      }
      await trx.insertInto('upload_writes').values(row).execute();
      for (let i = 0; i < parts.length; i += PART_BATCH) await trx.insertInto('upload_write_parts').values(parts.slice(i, i + PART_BATCH)).execute();
      return replaced;
    });
  }

  /** Forgets a contract's writes; false (and nothing done) once it is committed: they are the dataset's files then. */
  async deleteWrites(contractId: string): Promise<boolean> {
    return this.db.kysely.transaction().execute(async (trx) => {
      if ((await this.lockState(trx, contractId)) === 'committed') return false;
      await trx.deleteFrom('upload_writes').where('contract_id', '=', contractId).execute();
      return true;
    });
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

  /** Records a key's answer, so the key answers it from now on. */
  async finishCommitKey(owner: string, key: string, response: Record<string, unknown>, q: Executor = this.db.kysely): Promise<void> {
    await q.updateTable('upload_commits').set({ state: 'done', response: JSON.stringify(response) }).where('owner', '=', owner).where('idempotency_key', '=', key).execute();
  }

  /** In the commit's transaction: the contract is committed as its snapshot, and the key (if any) answers the commit's response. */
  async markCommitted(trx: Executor, contractId: string, snapshotId: number, rows: number, key?: { owner: string; key: string; response: Record<string, unknown> }): Promise<void> {
    await trx.updateTable('upload_contracts').set({ state: 'committed', snapshot_id: snapshotId, rows_written: rows, updated_at: new Date() }).where('contract_id', '=', contractId).execute();
    if (key) await this.finishCommitKey(key.owner, key.key, key.response, trx);
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
