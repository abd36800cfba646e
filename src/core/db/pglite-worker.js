// The embedded PostgreSQL (PGlite) of a Lakeport process, on a worker thread of its own (see
// pglite.ts). PGlite runs each statement synchronously in WebAssembly: on the main thread every
// statement would stall all requests for about a millisecond. Plain JavaScript, so the thread needs
// no TypeScript loader.
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';

const { dataDir, template } = workerData;
const client = await PGlite.create({ ...(dataDir ? { dataDir } : {}), ...(template ? { loadDataDir: new Blob([template]) } : {}) });

/** An error as plain data: the fields of a PostgreSQL error (code, constraint, detail, …) that cloning would drop. */
function plain(error) {
  if (!(error instanceof Error)) return { message: String(error) };
  return { ...error, name: error.name, message: error.message };
}

parentPort.on('message', async ({ id, op, sql, params }) => {
  try {
    let result;
    if (op === 'query') {
      const { rows, affectedRows } = await client.query(sql, params);
      result = { rows, affectedRows };
    } else if (op === 'exec') {
      await client.exec(sql);
    } else if (op === 'open') {
      // Opened above, before this thread listened.
    } else if (op === 'close') {
      await client.close();
    } else {
      throw new Error(`unknown operation ${op}`);
    }
    parentPort.postMessage({ id, result });
  } catch (error) {
    parentPort.postMessage({ id, error: plain(error) });
  }
});
