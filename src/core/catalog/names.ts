import { appError } from '../errors/index.ts';

/** Workspace, collection and dataset names: letters, digits and underscores, stored lowercased. */
export const NAME_REGEX = /^[A-Za-z0-9_]{1,63}$/;

/** Tag names may also hold `.` and `-`, and start with a letter or underscore so they never read as a snapshot id. */
export const TAG_NAME_REGEX = /^[A-Za-z_][A-Za-z0-9_.-]{0,62}$/;

/** Selector words that can never be tag names. */
export const RESERVED_TAG_NAMES: readonly string[] = ['current', 'previous'];

export type NameKind = 'workspace' | 'collection' | 'dataset';

/** A dataset by its three-part name. */
export interface DatasetRef {
  workspace: string;
  collection: string;
  dataset: string;
}

/** Validates and lowercases a workspace, collection or dataset name; 400 INVALID_NAME otherwise. */
export function normalizeName(kind: NameKind, raw: string): string {
  if (typeof raw !== 'string' || !NAME_REGEX.test(raw)) {
    throw appError('INVALID_NAME', `${describe(raw)} is not a valid ${kind} name: use 1 to 63 letters, digits or underscores`);
  }
  return raw.toLowerCase();
}

export function normalizeRef(ref: DatasetRef): DatasetRef {
  return {
    workspace: normalizeName('workspace', ref.workspace),
    collection: normalizeName('collection', ref.collection),
    dataset: normalizeName('dataset', ref.dataset),
  };
}

/** Validates and lowercases a tag name; 400 INVALID_NAME otherwise. */
export function normalizeTagName(raw: string): string {
  const name = typeof raw === 'string' ? raw.toLowerCase() : raw;
  if (typeof name !== 'string' || !TAG_NAME_REGEX.test(name) || RESERVED_TAG_NAMES.includes(name)) {
    throw appError(
      'INVALID_NAME',
      `${describe(raw)} is not a valid tag name: use 1 to 63 letters, digits, '_', '.' or '-', ` +
        `starting with a letter or '_' (not 'current' or 'previous')`,
    );
  }
  return name;
}

/** The three-part name of a dataset row. */
export function refOf(dataset: { workspace: string; collection: string; name: string }): DatasetRef {
  return { workspace: dataset.workspace, collection: dataset.collection, dataset: dataset.name };
}

export function formatRef(ref: DatasetRef): string {
  return `${ref.workspace}.${ref.collection}.${ref.dataset}`;
}

function describe(raw: unknown): string {
  return typeof raw === 'string' ? JSON.stringify(raw) : String(raw);
}
