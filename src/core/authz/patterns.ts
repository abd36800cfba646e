/** A resource in the catalog: a workspace, a collection in it, or a dataset in a collection. */
export interface Resource {
  workspace: string;
  collection?: string;
  dataset?: string;
}

/** `ws.*`, `ws.coll.*` or `ws.coll.ds`; `collection`/`dataset` undefined means "every one". */
export interface Pattern {
  workspace: string;
  collection?: string;
  dataset?: string;
}

const NAME = /^[a-z0-9_]{1,63}$/;

/** Parses and normalises (lowercases) a grant pattern; null when it is not one of the three forms. */
export function parsePattern(text: string): Pattern | null {
  const parts = text.trim().toLowerCase().split('.');
  if (parts.length === 2 && parts[1] === '*' && NAME.test(parts[0])) return { workspace: parts[0] };
  if (parts.length === 3 && NAME.test(parts[0]) && NAME.test(parts[1])) {
    if (parts[2] === '*') return { workspace: parts[0], collection: parts[1] };
    if (NAME.test(parts[2])) return { workspace: parts[0], collection: parts[1], dataset: parts[2] };
  }
  return null;
}

export function formatPattern(p: Pattern): string {
  if (p.collection === undefined) return `${p.workspace}.*`;
  return `${p.workspace}.${p.collection}.${p.dataset ?? '*'}`;
}

export const PATTERN_HINT = "a pattern is 'workspace.*', 'workspace.collection.*' or 'workspace.collection.dataset'";

/** Whether a grant on `pattern` reaches `resource`. Names compare whole, so `ws_evil` is never inside `ws.*`. */
export function patternMatches(pattern: Pattern, resource: Resource): boolean {
  if (pattern.workspace !== resource.workspace) return false;
  if (pattern.collection === undefined) return true;
  if (pattern.collection !== resource.collection) return false;
  if (pattern.dataset === undefined) return true;
  return pattern.dataset === resource.dataset;
}

/** Whether everything `inner` reaches is also reached by `outer`. */
export function patternCovers(outer: Pattern, inner: Pattern): boolean {
  return patternMatches(outer, inner);
}
