// Creates a new embedded PostgreSQL cluster (PGlite) in the directory given, then exits. PGlite's
// initdb keeps about 550 MB it never gives back; a process of its own returns it to the system, so
// a server's first start weighs what its later starts do. Plain JavaScript, like pglite-worker.js.
import { PGlite } from '@electric-sql/pglite';

const client = await PGlite.create({ dataDir: process.argv[2] });
await client.close();
