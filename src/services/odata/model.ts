import type { DatasetRef, DataFile, Dataset, Snapshot, Tag } from '../../core/catalog/index.ts';
import type { Role } from '../../core/authz/index.ts';

/** A column as the OData layer sees it: its name and Lakeport type (see core/engine/types.ts). */
export interface ODataColumn {
  name: string;
  /** BOOLEAN, TINYINT…BIGINT, HUGEINT, U*INT, FLOAT, DOUBLE, DECIMAL(p,s), VARCHAR, DATE, TIME, TIMESTAMP, TIMESTAMP WITH TIME ZONE, IPV4. */
  type: string;
  nullable: boolean;
}

/** One dataset at the version a request selected, with what its $metadata describes. */
export interface DatasetVersion {
  ref: DatasetRef;
  dataset: Dataset;
  /** The selected snapshot; null for a dataset that has none yet (it reads as empty). */
  snapshot: Snapshot | null;
  /** The data files of the selected snapshot (their column_stats feed Custom.Statistics). */
  files: DataFile[];
  /** Tags naming the selected snapshot. */
  tags: Tag[];
  /** The caller's effective role on the dataset, and the policy patterns that grant it. */
  role: Role;
  policies: string[];
}
