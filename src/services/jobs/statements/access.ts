import type { Authorizer, Principal, Resource } from '../../../core/authz/index.ts';
import type { Catalog, Dataset } from '../../../core/catalog/index.ts';
import { AppError, type ErrorCode } from '../../../core/errors/index.ts';
import { StatementError, statementError, type Span } from './errors.ts';
import type { DatasetName, Located } from './parser.ts';

/** Runs `fn`; an error of another service below 500 gains a span (a place in the statement). */
export async function at<T>(span: Span | ((code: ErrorCode) => Span), fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof AppError && error.status < 500 && !(error instanceof StatementError)) {
      throw new StatementError(error, typeof span === 'function' ? span(error.code) : span);
    }
    throw error;
  }
}

export const labelOf = (n: DatasetName) => `${n.workspace}.${n.collection}.${n.dataset}`;
export const resourceOf = (n: DatasetName): Resource => ({ workspace: n.workspace, collection: n.collection, dataset: n.dataset });

/**
 * The dataset a statement names, as its caller may see it: one it may not read looks missing
 * (404 DATASET_NOT_FOUND, whatever exists), and one it may read but not change is 403.
 */
export class DatasetAccess {
  constructor(private readonly deps: { catalog: Catalog; authz: Authorizer }) {}

  /** The live dataset, when the caller may read it; undefined when it is missing or unreadable. */
  async readable(caller: Principal, name: Located<DatasetName>): Promise<Dataset | undefined> {
    const dataset = await this.deps.catalog.findDataset(name.value);
    if (!dataset || !(await at(name, () => this.deps.authz.can(caller, 'reader', resourceOf(name.value))))) return undefined;
    return dataset;
  }

  /**
   * The dataset for a writer (`what` names it in the 404: "Dataset", "View"…); undefined when missing
   * and `ifExists`. `check` refuses a wrong kind before the role is checked.
   */
  async writable(caller: Principal, name: Located<DatasetName>, options: { what?: string; ifExists?: boolean; check?: (dataset: Dataset) => void } = {}): Promise<Dataset | undefined> {
    const dataset = await this.readable(caller, name);
    if (!dataset) {
      if (options.ifExists) return undefined;
      throw statementError('DATASET_NOT_FOUND', `${options.what ?? 'Dataset'} ${labelOf(name.value)} does not exist, or you may not read it`, name);
    }
    options.check?.(dataset);
    await at(name, () => this.deps.authz.require(caller, 'writer', resourceOf(name.value)));
    return dataset;
  }
}
