import crypto from 'node:crypto';
import type { Db } from '../db/index.ts';
import { Sealer } from './sealing.ts';

/**
 * One data key per billing account: 32 random bytes, stored only sealed with the master key and
 * bound to the account, created on first use. Values sealed with it (e.g. secrets) can be re-keyed
 * per account without touching the master key.
 */
export class DataKeys {
  constructor(
    private readonly db: Db,
    private readonly master: Sealer,
  ) {}

  private static context(billingAccount: string) {
    return `lakeport/secret-data-key/v1/${billingAccount}`;
  }

  /** The account's data key as a Sealer (concurrent first uses agree on one key). */
  async forAccount(billingAccount: string): Promise<Sealer> {
    const context = DataKeys.context(billingAccount);
    const read = () => this.db.kysely.selectFrom('secret_data_keys').select('wrapped_key').where('billing_account', '=', billingAccount).executeTakeFirst();
    let row = await read();
    if (!row) {
      const fresh = crypto.randomBytes(32);
      await this.db.kysely
        .insertInto('secret_data_keys')
        .values({ billing_account: billingAccount, wrapped_key: this.master.seal(fresh, context) })
        .onConflict((oc) => oc.column('billing_account').doNothing())
        .execute();
      fresh.fill(0);
      row = (await read())!;
    }
    return new Sealer(this.master.open(row.wrapped_key, context));
  }
}
