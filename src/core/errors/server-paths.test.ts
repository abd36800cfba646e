import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { addServerPath, scrubServerPaths } from './server-paths.ts';

describe('scrubServerPaths', () => {
  const tmp = os.tmpdir();
  addServerPath('/srv/lakeport-data/');

  it.each([
    [`IO Error: No files found that match the pattern "${tmp}/lakeport-lake-x/lake/a/b/c.parquet"`, 'IO Error: No files found that match the pattern "<server path>"'],
    ['Permission Error: Cannot access file "/srv/lakeport-data/lake/ws/c/d/1.parquet/**/*.parquet" - disabled', 'Permission Error: Cannot access file "<server path>" - disabled'],
    [`temp_directory is ${tmp} and ${path.join(process.cwd(), '.tmp')}`, 'temp_directory is <server path> and <server path>'],
    ["Cannot open '/srv/lakeport-data'", "Cannot open '<server path>'"],
    ['file:///srv/lakeport-data/x.csv', 'file://<server path>'],
  ])('%s', (message, scrubbed) => expect(scrubServerPaths(message)).toBe(scrubbed));

  it('keeps everything that is not under a server directory', () => {
    for (const message of ["Binder Error: column 'x/y' not found", 's3://bucket/srv/lakeport-data/x', '/srv/lakeport-database/x', '/etc/passwd', 'a.b.c']) {
      expect(scrubServerPaths(message)).toBe(message);
    }
  });
});
