/** A workspace as other modules may know it: the account service's record, in brief. */
export interface WorkspaceEntry {
  name: string;
  billingAccount: string;
  /** False once soft-deleted (until restored or purged). */
  live: boolean;
}

/**
 * The account service's answer to "does this workspace exist, and is it live?" (wired in app.ts).
 * Whether a caller may act in a deleted one is core/authz's decision (`WorkspaceStates`), not the reader's.
 */
export interface WorkspaceDirectory {
  find(name: string): Promise<WorkspaceEntry | undefined>;
}
