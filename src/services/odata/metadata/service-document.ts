import type { DatasetRef } from '../../../core/catalog/index.ts';
import { entitySetNames } from './names.ts';

export interface ServiceDocumentEntry {
  name: string;
  kind: 'EntitySet';
  /** Relative to the service root: `ws/coll/ds`. */
  url: string;
  /** `ws / coll / ds`: how BI tools list it, grouped by workspace and collection. */
  title: string;
}

export interface ServiceDocument {
  '@odata.context': string;
  value: ServiceDocumentEntry[];
}

const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const byPath = (a: DatasetRef, b: DatasetRef) =>
  order(a.workspace, b.workspace) || order(a.collection, b.collection) || order(a.dataset, b.dataset);

/**
 * The JSON service document: one entity set per dataset, sorted by workspace, collection and name
 * so each workspace and collection forms one run, each titled `ws / coll / ds`. `contextUrl` is
 * the service's `$metadata` URL; names are those the service-wide $metadata gives the same datasets.
 */
export function buildServiceDocument(contextUrl: string, refs: readonly DatasetRef[]): ServiceDocument {
  const names = entitySetNames(refs);
  const entries = refs
    .map((ref, i) => ({ ref, name: names[i] }))
    .sort((a, b) => byPath(a.ref, b.ref))
    .map(({ ref, name }) => ({
      name,
      kind: 'EntitySet' as const,
      url: `${ref.workspace}/${ref.collection}/${ref.dataset}`,
      title: `${ref.workspace} / ${ref.collection} / ${ref.dataset}`,
    }));
  return { '@odata.context': contextUrl, value: entries };
}

/** Entries per piece of serviceDocumentChunks. */
const ENTRIES_PER_CHUNK = 500;

/**
 * The service document as JSON text, a few hundred entries at a time (what the route streams): the
 * text JSON.stringify gives for buildServiceDocument's answer, written straight to text.
 */
export function* serviceDocumentChunks(contextUrl: string, refs: readonly DatasetRef[]): Generator<string> {
  const names = entitySetNames(refs);
  const order = refs.map((_, i) => i).sort((a, b) => byPath(refs[a], refs[b]));
  let text = `{"@odata.context":${JSON.stringify(contextUrl)},"value":[`;
  for (let i = 0; i < order.length; i++) {
    const { workspace, collection, dataset } = refs[order[i]];
    // Names are NAME_REGEX identifiers, but the JSON is escaped all the same.
    text +=
      `${i > 0 ? ',' : ''}{"name":${JSON.stringify(names[order[i]])},"kind":"EntitySet",` +
      `"url":${JSON.stringify(`${workspace}/${collection}/${dataset}`)},"title":${JSON.stringify(`${workspace} / ${collection} / ${dataset}`)}}`;
    if ((i + 1) % ENTRIES_PER_CHUNK === 0) {
      yield text;
      text = '';
    }
  }
  yield `${text}]}`;
}
