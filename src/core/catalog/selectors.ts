import { appError } from '../errors/index.ts';
import { normalizeTagName } from './names.ts';

/** Which snapshot of a dataset to read. */
export type SnapshotSelector =
  | { kind: 'current' }
  | { kind: 'previous' }
  | { kind: 'tag'; name: string }
  | { kind: 'id'; snapshotId: number };

/**
 * Parses a version label as OData and SQL write it: `current`, `previous`, a numeric snapshot id or a
 * tag name (an optional leading `@` is ignored). 400 INVALID_SELECTOR when it is none of these.
 */
export function parseSelector(label: string): SnapshotSelector {
  const text = typeof label === 'string' ? label.trim().replace(/^@/, '') : '';
  const lower = text.toLowerCase();
  if (lower === 'current') return { kind: 'current' };
  if (lower === 'previous') return { kind: 'previous' };
  if (/^\d{1,16}$/.test(text)) {
    const snapshotId = Number(text);
    if (snapshotId > 0 && Number.isSafeInteger(snapshotId)) return { kind: 'id', snapshotId };
  } else {
    try {
      return { kind: 'tag', name: normalizeTagName(text) };
    } catch {
      // falls through to the error below
    }
  }
  throw appError(
    'INVALID_SELECTOR',
    `${JSON.stringify(label)} is not a version selector: use 'current', 'previous', a tag name or a snapshot id`,
  );
}

export function formatSelector(selector: SnapshotSelector): string {
  switch (selector.kind) {
    case 'current':
    case 'previous':
      return `@${selector.kind}`;
    case 'tag':
      return `@${selector.name}`;
    case 'id':
      return `@${selector.snapshotId}`;
  }
}
