import { createHash } from 'node:crypto';
import { formatRef, type DatasetRef } from '../../../core/catalog/index.ts';

/** CSDL caps a SimpleIdentifier at 128 characters. */
const MAX_IDENTIFIER = 128;

/** Hash lengths tried, in turn, until every name in a set is distinct. */
const SUFFIX_LENGTHS = [8, 16, 64];

function hashOf(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** `name` shortened to leave room for `_<hash>`, with the hash of `key` appended. */
function withSuffix(name: string, key: string, length: number): string {
  const suffix = `_${hashOf(key).slice(0, length)}`;
  return name.slice(0, MAX_IDENTIFIER - suffix.length) + suffix;
}

/** A dataset's full name, `ws.coll.ds`: what the hashes are taken of. */
const fullName = (ref: DatasetRef) => formatRef(ref).toLowerCase();

function baseName(ref: DatasetRef): string {
  const joined = [ref.workspace, ref.collection, ref.dataset].join('__').toLowerCase().replace(/[^a-z0-9_]/g, '_');
  return /^[0-9]/.test(joined) ? `_${joined}` : joined;
}

/**
 * The entity set (and entity type) name of a dataset: `ws__coll__ds`, lowercased, with a leading
 * `_` when it would start with a digit. A name longer than 128 characters is cut and ends with a
 * hash of the dataset's full name. Two datasets can only share a name when their names themselves
 * hold `__` or start or end with `_`; entitySetNames tells those apart.
 */
export function entitySetName(ref: DatasetRef): string {
  const name = baseName(ref);
  return name.length <= MAX_IDENTIFIER ? name : withSuffix(name, fullName(ref), SUFFIX_LENGTHS[0]);
}

/**
 * Entity set names for a set of datasets, in the order given. When datasets share a name, each of
 * them gets `_` and a hash of its full `ws.coll.ds` name appended, so the result does not depend on
 * the order of `refs`, and a dataset's name only changes while another one it collides with is listed.
 */
export function entitySetNames(refs: readonly DatasetRef[]): string[] {
  const plain = refs.map(entitySetName);
  const owners = new Map<string, Set<string>>();
  refs.forEach((ref, i) => owners.set(plain[i], (owners.get(plain[i]) ?? new Set()).add(fullName(ref))));
  for (const length of SUFFIX_LENGTHS) {
    const names = refs.map((ref, i) => (owners.get(plain[i])!.size > 1 ? withSuffix(plain[i], fullName(ref), length) : plain[i]));
    if (distinctPerRef(refs, names)) return names;
  }
  throw new Error('entity set names could not be made distinct');
}

function distinctPerRef(refs: readonly DatasetRef[], names: string[]): boolean {
  const byName = new Map<string, string>();
  return names.every((name, i) => {
    const ref = fullName(refs[i]);
    if (byName.has(name) && byName.get(name) !== ref) return false;
    byName.set(name, ref);
    return true;
  });
}

/** The dataset an entity set name stands for among `refs`, as entitySetNames names them. */
export function findEntitySet(name: string, refs: readonly DatasetRef[]): DatasetRef | undefined {
  const index = entitySetNames(refs).indexOf(name);
  return index < 0 ? undefined : refs[index];
}

/** The synthetic key property every entity type carries (see docs/odata-metadata.md). */
export const ROW_ID = '_lakeport_row_id';

/** Letters (Latin-1 letters and beyond), digits, combining marks and `_`: safe as an XML NCName and a CSDL SimpleIdentifier. */
const IDENTIFIER = /^(?:[A-Za-z_]|(?![\u0080-\u00BF])\p{L})(?:[A-Za-z0-9_]|(?![\u0080-\u00BF])[\p{L}\p{Nd}\p{Mn}\p{Mc}])*$/u;
const NON_IDENTIFIER_CHAR = /(?:[^A-Za-z0-9_\p{L}\p{Nd}\p{Mn}\p{Mc}]|[\u0080-\u00BF])/gu;

export function isSimpleIdentifier(name: string): boolean {
  return name.length <= MAX_IDENTIFIER && IDENTIFIER.test(name);
}

function sanitize(name: string): string {
  let out = name.replace(NON_IDENTIFIER_CHAR, '_');
  if (!/^(?:[A-Za-z_]|\p{L})/u.test(out)) out = `_${out}`;
  return out.slice(0, MAX_IDENTIFIER);
}

export interface PropertyNames {
  /** The property name of each column, in column order. */
  columns: string[];
  /** The synthetic key property's name: `_lakeport_row_id` unless a column already has it. */
  rowId: string;
}

/**
 * EDM property names for a dataset's columns. A column name that is already a SimpleIdentifier is
 * kept as it is; any other has each offending character replaced by `_` (and a leading `_` when it
 * starts with a digit), plus `_<hash of the column name>` if that collides with another property.
 * The rows endpoint must use the same names for JSON keys, $select, $filter and $orderby.
 */
export function propertyNames(columns: readonly { name: string }[]): PropertyNames {
  const kept = columns.map((c) => (isSimpleIdentifier(c.name) ? c.name : undefined));
  const taken = new Set(kept.filter((n): n is string => n !== undefined));
  const names = columns.map((c, i) => kept[i] ?? claim(sanitize(c.name), c.name, taken));
  return { columns: names, rowId: claim(ROW_ID, ROW_ID, taken) };
}

/** `candidate`, or it with a hash of `key` appended (then of `key#2`, `key#3`…) while that is taken. */
function claim(candidate: string, key: string, taken: Set<string>): string {
  let name = candidate;
  for (let attempt = 1; taken.has(name); attempt++) name = withSuffix(candidate, attempt === 1 ? key : `${key}#${attempt}`, 8);
  taken.add(name);
  return name;
}
