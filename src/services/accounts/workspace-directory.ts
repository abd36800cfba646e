import { appError } from '../../core/errors/index.ts';

/** A workspace as other modules may know it: the account service's record, in brief. */
export interface WorkspaceEntry {
  name: string;
  billingAccount: string;
  /** False once soft-deleted (until restored or purged). */
  live: boolean;
}

/** The account service's answer to "does this workspace exist, and is it live?" (wired in app.ts). */
export interface WorkspaceDirectory {
  find(name: string): Promise<WorkspaceEntry | undefined>;
}

/** Throws 409 `WORKSPACE_DELETED` unless the workspace is live. */
export function assertLive(entry: WorkspaceEntry): void {
  if (!entry.live) throw appError('WORKSPACE_DELETED', `Workspace '${entry.name}' is deleted; restore it first`);
}

/** The workspace, which must exist (404 `WORKSPACE_NOT_FOUND`) and be live (409 `WORKSPACE_DELETED`). */
export async function requireLiveWorkspace(directory: WorkspaceDirectory, name: string): Promise<WorkspaceEntry> {
  const entry = await directory.find(name);
  if (!entry) throw appError('WORKSPACE_NOT_FOUND', `Workspace '${name}' does not exist`);
  assertLive(entry);
  return entry;
}
