import type { JobRow } from '../repo.ts';

/** What a statement did (or, checked without running, would do): the one-row result of its job. */
export interface StatementOutcome {
  message: string;
  /** A job the statement answers with instead of a finished one of its own (REFRESH: the refresh job). */
  job?: JobRow;
}
