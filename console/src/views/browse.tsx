/** Workspaces → collections → datasets, as lists of links. */
import { listCollections, listDatasets, listWorkspaces } from '../catalog.ts';
import { ErrorNotice } from '../errors.tsx';
import { Link } from '../link.tsx';
import { pathFor } from '../router.ts';
import type { ViewProps } from '../routes.ts';
import { useApi } from '../use-api.ts';

export function Breadcrumbs({ workspace, collection, dataset }: { workspace?: string; collection?: string; dataset?: string }) {
  const parts: { label: string; href: string }[] = [{ label: 'Workspaces', href: '/' }];
  if (workspace) parts.push({ label: workspace, href: pathFor('/browse/:workspace', { workspace }) });
  if (workspace && collection) parts.push({ label: collection, href: pathFor('/browse/:workspace/:collection', { workspace, collection }) });
  if (workspace && collection && dataset) parts.push({ label: dataset, href: pathFor('/browse/:workspace/:collection/:dataset', { workspace, collection, dataset }) });
  return (
    <nav aria-label="Breadcrumb" class="crumbs">
      <ol>
        {parts.map((p, i) => (
          <li key={p.href}>{i === parts.length - 1 ? <span aria-current="page">{p.label}</span> : <Link href={p.href}>{p.label}</Link>}</li>
        ))}
      </ol>
    </nav>
  );
}

export default function Browse({ params }: ViewProps) {
  const { workspace, collection } = params;
  const level = collection ? 'datasets' : workspace ? 'collections' : 'workspaces';
  const items = useApi<string[]>(
    () => (collection ? listDatasets(workspace, collection) : workspace ? listCollections(workspace) : listWorkspaces()),
    [workspace, collection],
  );
  const hrefOf = (name: string) =>
    collection
      ? pathFor('/browse/:workspace/:collection/:dataset', { workspace, collection, dataset: name })
      : workspace
        ? pathFor('/browse/:workspace/:collection', { workspace, collection: name })
        : pathFor('/browse/:workspace', { workspace: name });
  const title = collection ? `${workspace}.${collection}` : workspace ?? 'Workspaces';
  return (
    <section>
      <Breadcrumbs workspace={workspace} collection={collection} />
      <h1>{title}</h1>
      <ErrorNotice error={items.error} />
      {items.loading && !items.value && <p class="muted">Loading {level}…</p>}
      {items.value && items.value.length === 0 && <p class="muted">No {level} you may read yet.</p>}
      {items.value && items.value.length > 0 && (
        <ul class="cards" data-testid={`${level}-list`} aria-label={level}>
          {items.value.map((name) => (
            <li key={name}>
              <Link href={hrefOf(name)}>{name}</Link>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
