import fs from 'node:fs/promises';
import path from 'node:path';

/** The local lake under the data directory: `lake/<workspace>/<collection>/<dataset>/…`. */
export class LocalLake {
  constructor(readonly root: string) {}

  /** Removes every file of a workspace (after its grace window). */
  async removeWorkspace(workspace: string): Promise<void> {
    if (!/^[a-z0-9_]{1,63}$/.test(workspace)) throw new Error(`refusing to remove an unsafe workspace path '${workspace}'`);
    await fs.rm(path.join(this.root, workspace), { recursive: true, force: true });
  }
}
