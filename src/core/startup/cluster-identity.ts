import { newId, type Sealer } from '../crypto/index.ts';
import type { Db } from '../db/index.ts';
import { BlobNotFoundError, type BlobStore } from '../storage/index.ts';
import { StartRefusal } from './refusal.ts';

/**
 * What every server and worker sharing one metadata database must agree on, checked at each start
 * (docs/deploy.md, "Start-up refusals"): the master key and the storage. The first start writes the
 * database's identity (`cluster_identity`: a cluster id, a constant sealed with the master key, the
 * storage's location) and a marker object in the storage naming the cluster; every later start opens
 * the sealed constant with its own key and reads the marker from its own storage.
 */

/** The storage's marker object: which cluster's data the storage holds. */
export const STORAGE_MARKER_KEY = 'lakeport-cluster.json';
const KEY_CHECK = 'lakeport master key check';
const keyCheckContext = (clusterId: string) => `lakeport/cluster-key-check/v1/${clusterId}`;
/** Arbitrary constant: two first starts write one identity, the second waits for the first. */
const IDENTITY_LOCK_KEY = 7_242_002;

export interface ClusterCheck {
  db: Db;
  sealer: Sealer;
  blobs: BlobStore;
  /** Where this process's master key came from, for the refusal: `LAKEPORT_MASTER_KEY` or the key file's path. */
  keySource: string;
  /**
   * For a database used before it had an identity: whether the master key opens what is sealed in it
   * already (undefined: nothing yet), so that the first start after an upgrade records the right key.
   */
  opensSealedValues(): Promise<boolean | undefined>;
}

interface IdentityRow {
  cluster_id: string;
  key_check: string;
  storage_location: string;
}

/** Checks this process against the database's identity (writing it at the first start); refuses (StartRefusal) a mismatch. */
export async function checkClusterIdentity(check: ClusterCheck): Promise<{ clusterId: string; created: boolean }> {
  const select = 'SELECT cluster_id, key_check, storage_location FROM cluster_identity';
  // Asked before the transaction: on PGlite it holds the one session the question needs.
  const before = await check.db.kysely.selectFrom('cluster_identity').select('cluster_id').executeTakeFirst();
  const opens = before ? undefined : await check.opensSealedValues();
  return check.db.scriptTransaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [IDENTITY_LOCK_KEY]);
    const [row] = await tx.query<IdentityRow>(select);
    const marker = await readMarker(check.blobs);
    if (row) {
      if (!opensKeyCheck(check.sealer, row)) throw masterKeyRefusal(check.keySource);
      if (marker?.cluster_id !== row.cluster_id) throw storageRefusal(check.blobs.location, row, marker);
      return { clusterId: row.cluster_id, created: false };
    }
    if (marker) throw storageRefusal(check.blobs.location, undefined, marker);
    if (opens === false) throw masterKeyRefusal(check.keySource);
    const clusterId = newId('clu');
    await check.blobs.put(STORAGE_MARKER_KEY, `${JSON.stringify({ cluster_id: clusterId, created_at: new Date().toISOString() })}\n`, { contentType: 'application/json' });
    await tx.query('INSERT INTO cluster_identity (cluster_id, key_check, storage_location) VALUES ($1, $2, $3)', [
      clusterId,
      check.sealer.seal(KEY_CHECK, keyCheckContext(clusterId)),
      check.blobs.location,
    ]);
    return { clusterId, created: true };
  });
}

function opensKeyCheck(sealer: Sealer, row: IdentityRow): boolean {
  try {
    return sealer.open(row.key_check, keyCheckContext(row.cluster_id)).toString('utf8') === KEY_CHECK;
  } catch {
    return false;
  }
}

/** The storage's marker: `{cluster_id}`, `{}` when it is not one of ours, undefined when there is none. */
async function readMarker(blobs: BlobStore): Promise<{ cluster_id?: string } | undefined> {
  let text = '';
  try {
    for await (const chunk of await blobs.get(STORAGE_MARKER_KEY)) text += chunk.toString();
  } catch (error) {
    if (error instanceof BlobNotFoundError) return undefined;
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    return typeof parsed === 'object' && parsed !== null && typeof (parsed as { cluster_id?: unknown }).cluster_id === 'string' ? (parsed as { cluster_id: string }) : {};
  } catch {
    return {};
  }
}

function masterKeyRefusal(keySource: string): StartRefusal {
  return new StartRefusal(
    `the master key (from ${keySource}) does not open this cluster's metadata database, which another server initialised with another key`,
    'set LAKEPORT_MASTER_KEY to the key the cluster was initialised with (that server\'s LAKEPORT_MASTER_KEY or its <data dir>/master-key file), the same on every server and worker',
    'master-key',
  );
}

function storageRefusal(location: string, row: IdentityRow | undefined, marker: { cluster_id?: string } | undefined): StartRefusal {
  const fix = 'set LAKEPORT_STORAGE_URL (and S3_ENDPOINT) to the storage the cluster was initialised with, the same on every server and worker';
  if (!row) {
    return new StartRefusal(
      `the storage ${location} holds the data of another Lakeport cluster (${marker?.cluster_id ?? 'a marker Lakeport did not write'}), and this metadata database is new`,
      `point DATABASE_URL at that cluster's database, or LAKEPORT_STORAGE_URL at storage of this database's own`,
      'storage-url',
    );
  }
  const found = marker === undefined ? `has no ${STORAGE_MARKER_KEY}` : `holds the data of another cluster (${marker.cluster_id ?? 'a marker Lakeport did not write'})`;
  return new StartRefusal(`the storage ${location} is not this cluster's (${row.cluster_id}, initialised with ${row.storage_location}), it ${found}`, fix, 'storage-url');
}
