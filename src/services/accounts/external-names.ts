import type { ExternalDatasetEntry } from '../../core/catalog/index.ts';
import type { SKIP_REASONS } from './catalog-binding-schemas.ts';
import type { TableIdentifier } from './iceberg-rest.ts';

/**
 * How an external catalog's tables become Lakeport names (docs/catalog-bindings.md, "Names"): a
 * namespace is a collection, its parts joined by `__` when it has several levels (`["sales",
 * "eu"]` → `sales__eu`), and a table a dataset. Lakeport names are 1–63 letters, digits and
 * underscores, kept lowercase. Without `preserve_sql_case` external names are folded to lowercase;
 * with it, a name that is not already lowercase is skipped rather than renamed. Names Lakeport
 * cannot hold, and several external tables landing on one name, are skipped too — never guessed.
 */

export type SkipReason = (typeof SKIP_REASONS)[number];

export interface SkippedTable {
  namespace: string[];
  table: string;
  reason: SkipReason;
  detail: string;
}

export interface MappedTable extends ExternalDatasetEntry {
  source: TableIdentifier;
}

const PART = /^[A-Za-z0-9_]+$/;
const MAX_NAME = 63;

/** The Lakeport name of one external name, or why there is none. */
function mapPart(part: string, preserveCase: boolean): string | SkipReason {
  if (!PART.test(part)) return 'invalid_name';
  if (preserveCase && part !== part.toLowerCase()) return 'case_not_preserved';
  return part.toLowerCase();
}

const SKIP_DETAIL: Record<SkipReason, string> = {
  invalid_name: 'a Lakeport name holds only letters, digits and underscores',
  case_not_preserved: 'preserve_sql_case is on and Lakeport names are lowercase, so this name cannot be kept as it is',
  name_too_long: 'a Lakeport name is at most 63 characters',
  name_collision: 'another external table maps to the same Lakeport name',
  dataset_exists: 'a Lakeport dataset of another kind already has this name',
};

export function skipped(source: TableIdentifier, reason: SkipReason): SkippedTable {
  return { namespace: source.namespace, table: source.name, reason, detail: SKIP_DETAIL[reason] };
}

/** The stub entries for the tables that map, and the ones skipped with why. */
export function mapTables(tables: readonly TableIdentifier[], options: { preserveCase: boolean; kind: string }): { entries: MappedTable[]; skipped: SkippedTable[] } {
  const out: SkippedTable[] = [];
  const byName = new Map<string, MappedTable[]>();
  const seen = new Set<string>();
  for (const source of tables) {
    const id = JSON.stringify([source.namespace, source.name]);
    if (seen.has(id)) continue;
    seen.add(id);
    const parts = [...source.namespace, source.name].map((p) => mapPart(p, options.preserveCase));
    const failed = parts.find((p) => p === 'invalid_name' || p === 'case_not_preserved') as SkipReason | undefined;
    if (failed) {
      out.push(skipped(source, failed));
      continue;
    }
    const collection = parts.slice(0, -1).join('__');
    const name = parts[parts.length - 1];
    if (collection.length > MAX_NAME || name.length > MAX_NAME || collection.length === 0) {
      out.push(skipped(source, collection.length === 0 ? 'invalid_name' : 'name_too_long'));
      continue;
    }
    const entry: MappedTable = {
      collection,
      name,
      description: `Listed from the external catalog (${options.kind}): ${[...source.namespace, source.name].join('.')}`,
      properties: { external: { kind: options.kind, namespace: source.namespace, name: source.name } },
      source,
    };
    const key = `${collection}.${name}`;
    byName.set(key, [...(byName.get(key) ?? []), entry]);
  }
  const entries: MappedTable[] = [];
  for (const group of byName.values()) {
    if (group.length === 1) entries.push(group[0]);
    else out.push(...group.map((e) => skipped(e.source, 'name_collision')));
  }
  return { entries, skipped: out };
}
