import { AppError, appError } from '../errors/index.ts';
import type { NamespaceProperties } from '../db/index.ts';

/** The guards in force in a workspace, defaults applied. */
export interface NamespaceGuards {
  /** The workspace itself cannot be deleted. */
  deletion_protection: boolean;
  /** Its datasets and collections cannot be dropped. */
  drop_protection: boolean;
  /** Its snapshots cannot be expired, nor its tags moved or deleted. */
  history_protection: boolean;
}

/** A change to a namespace's properties: a value sets it, `null` returns it to its default. */
export type NamespacePropertiesPatch = { [K in keyof NamespaceProperties]?: boolean | null };

const PROPERTY_NAMES: readonly (keyof NamespaceProperties)[] = ['deletion_protection', 'drop_protection', 'history_protection'];

/** A locked workspace also refuses dropping its datasets, unless drop_protection says otherwise. */
export function resolveGuards(props: NamespaceProperties): NamespaceGuards {
  const deletion = props.deletion_protection ?? false;
  return {
    deletion_protection: deletion,
    drop_protection: props.drop_protection ?? deletion,
    history_protection: props.history_protection ?? false,
  };
}

/** Applies a patch; 400 INVALID_PROPERTY for an unknown name or a value that is not a boolean. */
export function mergeProperties(current: NamespaceProperties, patch: NamespacePropertiesPatch): NamespaceProperties {
  const next: NamespaceProperties = { ...current };
  for (const [name, value] of Object.entries(patch)) {
    if (!PROPERTY_NAMES.includes(name as keyof NamespaceProperties)) {
      throw appError('INVALID_PROPERTY', `Unknown workspace property '${name}'; known: ${PROPERTY_NAMES.join(', ')}`);
    }
    const key = name as keyof NamespaceProperties;
    if (value === null) delete next[key];
    else if (typeof value === 'boolean') next[key] = value;
    else if (value !== undefined) throw appError('INVALID_PROPERTY', `Workspace property '${name}' must be true, false or null`);
  }
  return next;
}

export function guarded(detail: string): AppError {
  return appError('GUARDED', detail);
}
