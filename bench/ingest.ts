// `npm run bench -- ingest`: a CSV of 5 million rows uploaded through the service (negotiate, stream,
// commit), against DuckDB's own `COPY (FROM read_csv(...)) TO 'x.parquet'` on the same file, same run.
//
// Client, server and DuckDB share the machine's cores, and other work on it skews single runs, so
// every figure comes with the load average and the CPU time the server and the client used, and the
// comparison is repeated (BENCH_REPEAT, default 3), alternating raw DuckDB and the service. It prints
// the per-round ratios, their median, and the ratio of the best runs (noise only ever adds time).
// BENCH_ROWS sets the size; BENCH_CSV reuses a CSV of this generator's columns; BENCH_CLIENT picks
// the uploading client (see `send`). With DATABASE_URL set, the server keeps its metadata in
// PostgreSQL.
//
// Every round uploads the file twice, negotiated from two samples: "before", the first 1 MiB cut at a
// record end (what the client sent until it sampled across the file), and "after", the client's
// `readSample` (the same 1 MiB budget: head, 10 middle ranges, tail). Negotiation time includes reading the sample.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { json, median, setUp } from './lib/lake.ts';
import { startServer } from './lib/server.ts';
import { readSample } from '../src/client/samples.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 5_000_000);
const REPEAT = Math.max(1, Number(process.env.BENCH_REPEAT ?? 3));
const SAMPLE_BYTES = 1 << 20;
/** The warm-up upload: enough for a few chunks. */
const WARM_UP_BYTES = 40 << 20;

async function makeCsv(file: string) {
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  await c.run(`COPY (
      SELECT i AS id,
             TIMESTAMP '2024-01-01' + to_seconds(i) AS placed_at,
             round(random() * 1000, 2) AS amount,
             'cat_' || (i % 97) AS category,
             i % 3 = 0 AS flagged,
             '10.' || (i % 250) || '.' || (i % 200) || '.' || (i % 199) AS ip
      FROM range(${ROWS}) t(i)) TO '${file}' (FORMAT csv, HEADER)`);
  c.closeSync();
  db.closeSync();
}

async function rawDuckDb(file: string, out: string): Promise<number> {
  const db = await DuckDBInstance.create(':memory:', { threads: '2' });
  const c = await db.connect();
  const start = performance.now();
  await c.run(`COPY (FROM read_csv('${file}')) TO '${out}' (FORMAT parquet)`);
  const seconds = (performance.now() - start) / 1000;
  c.closeSync();
  db.closeSync();
  await fsp.rm(out, { force: true });
  return seconds;
}

/** A CSV prefix of at most `bytes`, trimmed to its last complete line (this generator writes no quoted newlines). */
async function prefixOf(file: string, bytes: number): Promise<Buffer> {
  const handle = await fsp.open(file);
  const { buffer, bytesRead } = await handle.read(Buffer.alloc(bytes), 0, bytes, 0);
  await handle.close();
  return buffer.subarray(0, buffer.subarray(0, bytesRead).lastIndexOf(0x0a) + 1);
}

type Sampling = 'before' | 'after';
const sampleOf = (file: string, sampling: Sampling) => (sampling === 'before' ? prefixOf(file, SAMPLE_BYTES) : readSample(file, 'csv'));

function countNewlines(buffer: Buffer): number {
  let n = 0;
  for (let i = buffer.indexOf(0x0a); i !== -1; i = buffer.indexOf(0x0a, i + 1)) n++;
  return n;
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
async function cpuSecondsOf(pid: number): Promise<number | undefined> {
  const stat = await fsp.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (!stat) return undefined;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

/** The server process: our child running `lakeport.cjs serve`. */
async function serverPid(): Promise<number | undefined> {
  for (const entry of await fsp.readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await fsp.readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid !== process.pid) continue;
    const cmdline = await fsp.readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes('lakeport.cjs')) return Number(entry);
  }
  return undefined;
}

const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

/**
 * How the file is sent (BENCH_CLIENT). The client shares the machine's cores with the server, so a
 * heavier client slows the service down too:
 * - `http` (default): Node's http.request, the file piped in 1 MiB reads — about what curl costs;
 * - `fetch`: fetch() with a file stream body, 256 KiB reads, as Lakeport's own CLI client does;
 * - `curl`: curl -T, in a process of its own (its CPU time is added to the client's).
 */
const CLIENT = (process.env.BENCH_CLIENT ?? 'http') as 'http' | 'fetch' | 'curl';
if (!['http', 'fetch', 'curl'].includes(CLIENT)) throw new Error(`BENCH_CLIENT must be http, fetch or curl, not ${CLIENT}`);

async function send(client: typeof CLIENT, url: string, headers: Record<string, string>, file: string): Promise<{ body: string; cpuSeconds?: number }> {
  if (client === 'fetch') {
    const response = await fetch(url, { method: 'POST', headers, body: fs.createReadStream(file, { highWaterMark: 256 * 1024 }) as unknown as BodyInit, duplex: 'half' } as RequestInit);
    const body = await response.text();
    if (!response.ok) throw new Error(`${response.status} ${body}`);
    return { body };
  }
  if (client === 'curl') {
    const args = ['-sS', '-X', 'POST', '-T', file, '-w', '\\n%{http_code}', ...Object.entries({ ...headers, expect: '' }).flatMap(([k, v]) => ['-H', `${k}: ${v}`]), url];
    // /usr/bin/time measures curl's CPU time, where it is installed.
    const timing = path.join(os.tmpdir(), `lakeport-bench-curl-${process.pid}.time`);
    const timed = fs.existsSync('/usr/bin/time');
    const { stdout, cpuSeconds } = await new Promise<{ stdout: string; cpuSeconds?: number }>((resolve, reject) => {
      const child = timed ? spawn('/usr/bin/time', ['-f', '%U %S', '-o', timing, 'curl', ...args], { stdio: ['ignore', 'pipe', 'inherit'] }) : spawn('curl', args, { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d));
      child.on('error', reject);
      child.on('exit', (code) => {
        if (code !== 0) return reject(new Error(`curl exited with ${code}`));
        const times = timed ? fs.readFileSync(timing, 'utf8').trim().split(/\s+/).map(Number) : undefined;
        fs.rmSync(timing, { force: true });
        resolve({ stdout: out, cpuSeconds: times ? times[0] + times[1] : undefined });
      });
    });
    const status = Number(stdout.slice(stdout.lastIndexOf('\n') + 1));
    const body = stdout.slice(0, stdout.lastIndexOf('\n'));
    if (status !== 200) throw new Error(`${status} ${body}`);
    return { body, cpuSeconds };
  }
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'POST', headers }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (d: string) => (body += d));
      response.on('end', () => (response.statusCode === 200 ? resolve({ body }) : reject(new Error(`${response.statusCode} ${body}`))));
      response.on('error', reject);
    });
    request.on('error', reject);
    fs.createReadStream(file, { highWaterMark: 1 << 20 })
      .on('error', reject)
      .pipe(request);
  });
}

interface Upload {
  negotiateSeconds: number;
  sampleBytes: number;
  writeSeconds: number;
  totalSeconds: number;
  parquetBytes: number;
  parts: number;
  serverCpu?: number;
  clientCpu: number;
}

async function serviceSession() {
  const server = await startServer();
  const { url, adminToken } = server;
  const pid = await serverPid();
  const { auth } = await setUp(url, adminToken);
  const jsonHeaders = { ...auth, 'content-type': 'application/json' };

  let round = 0;
  /** One upload of `file` into a new dataset: negotiate (infer), accept, write, commit. */
  const upload = async (file: string, size: number, rows: number, sampling: Sampling = 'after'): Promise<Upload> => {
    round++;
    const start = performance.now();
    const form = new FormData();
    form.append('contract', JSON.stringify({ destination: `bench.orders.daily_${round}`, schema: { mode: 'infer' } }));
    const sample = await sampleOf(file, sampling);
    form.append('sample', new Blob([new Uint8Array(sample)]), path.basename(file));
    const contract = await json<{ contract_id: string; schema_fingerprint: string }>(await fetch(`${url}/upload/v2/contracts`, { method: 'POST', headers: auth, body: form }));
    const negotiateSeconds = (performance.now() - start) / 1000;
    await json(await fetch(`${url}/upload/v2/contracts/${contract.contract_id}/accept`, { method: 'PUT', headers: jsonHeaders, body: JSON.stringify({ schema_fingerprint: contract.schema_fingerprint }) }));
    const serverCpuBefore = pid ? await cpuSecondsOf(pid) : undefined;
    const clientCpuBefore = process.cpuUsage();
    const writeStart = performance.now();
    const headers = { ...auth, 'content-type': 'text/csv', 'content-length': String(size), 'x-file-name': path.basename(file) };
    const sent = await send(CLIENT, `${url}/upload/v2/contracts/${contract.contract_id}/data`, headers, file);
    const written = JSON.parse(sent.body) as { written: { rows: number; bytes: number; parts?: number }[] };
    const writeSeconds = (performance.now() - writeStart) / 1000;
    const clientCpu = process.cpuUsage(clientCpuBefore);
    if (sent.cpuSeconds !== undefined) clientCpu.user += sent.cpuSeconds * 1e6;
    const serverCpuAfter = pid ? await cpuSecondsOf(pid) : undefined;
    const commit = await json<{ rows_written: number; snapshot: { snapshot_id: number } }>(
      await fetch(`${url}/upload/v2/contracts/${contract.contract_id}/commit`, { method: 'POST', headers: { ...auth, 'idempotency-key': `bench-${round}` } }),
    );
    const totalSeconds = (performance.now() - start) / 1000;
    if (commit.rows_written !== rows) throw new Error(`committed ${commit.rows_written} rows, expected ${rows}`);
    return {
      negotiateSeconds,
      sampleBytes: sample.length,
      writeSeconds,
      totalSeconds,
      parquetBytes: written.written[0].bytes,
      parts: written.written[0].parts ?? 1,
      serverCpu: serverCpuBefore !== undefined && serverCpuAfter !== undefined ? serverCpuAfter - serverCpuBefore : undefined,
      clientCpu: (clientCpu.user + clientCpu.system) / 1e6,
    };
  };
  return {
    upload,
    database: server.database,
    peak: () => server.peakRssBytes(),
    stop: () => server.stop(),
  };
}

export async function run(): Promise<void> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'lakeport-ingest-bench-'));
  try {
    let file = process.env.BENCH_CSV;
    if (!file) {
      file = path.join(dir, 'orders.csv');
      process.stderr.write(`generating ${ROWS.toLocaleString()} rows of CSV...\n`);
      await makeCsv(file);
    }
    const size = (await fsp.stat(file)).size;
    const rows = process.env.BENCH_CSV ? await countRows(file) : ROWS;
    const mb = size / 1e6;
    const session = await serviceSession();
    const rounds: { raw: number; service: Upload; before: Upload; loadBefore: string }[] = [];
    let peak: number | undefined;
    try {
      // A warm-up, not counted: the first upload after a start also pays for compiling the code on
      // its path (raw DuckDB's timing starts after its engine is up, too).
      const warm = path.join(dir, 'warm.csv');
      const prefix = await prefixOf(file, WARM_UP_BYTES);
      await fsp.writeFile(warm, prefix);
      process.stderr.write('warm-up...\n');
      await rawDuckDb(warm, path.join(dir, 'raw.parquet'));
      await session.upload(warm, prefix.length, countNewlines(prefix) - 1);
      for (let i = 0; i < REPEAT; i++) {
        const loadBefore = load();
        process.stderr.write(`round ${i + 1}/${REPEAT} (load ${loadBefore}): raw DuckDB COPY...`);
        const raw = await rawDuckDb(file, path.join(dir, 'raw.parquet'));
        process.stderr.write(` ${raw.toFixed(2)} s; through the service, head-only sample (before)...`);
        // The order alternates, so neither sampling always runs on a warmer machine.
        const [before, service] = i % 2 === 0
          ? [await session.upload(file, size, rows, 'before'), await session.upload(file, size, rows, 'after')]
          : await session.upload(file, size, rows, 'after').then(async (after) => [await session.upload(file, size, rows, 'before'), after]);
        process.stderr.write(` ${before.totalSeconds.toFixed(2)} s; spread sample (after) ${service.totalSeconds.toFixed(2)} s\n`);
        rounds.push({ raw, service, before, loadBefore });
      }
    } finally {
      peak = await session.peak();
      await session.stop();
    }
    const cores = os.cpus().length;
    const lines = rounds.map(({ raw, service: s, before: h, loadBefore }, i) => {
      const cpu = s.serverCpu === undefined ? '' : `, cpu server ${s.serverCpu.toFixed(2)} s + client ${s.clientCpu.toFixed(2)} s`;
      return (
        `  round ${i + 1} (load before ${loadBefore}): raw ${raw.toFixed(2)} s = ${(mb / raw).toFixed(1)} MB/s; ` +
        `POST /data ${s.writeSeconds.toFixed(2)} s = ${(mb / s.writeSeconds).toFixed(1)} MB/s = ${(raw / s.writeSeconds).toFixed(2)}x (${s.parts} parts${cpu}); ` +
        `end to end ${s.totalSeconds.toFixed(2)} s = ${(raw / s.totalSeconds).toFixed(2)}x\n` +
        `    sampling before (head ${(h.sampleBytes / 1e6).toFixed(2)} MB): negotiate ${h.negotiateSeconds.toFixed(3)} s, end to end ${h.totalSeconds.toFixed(2)} s = ${(raw / h.totalSeconds).toFixed(2)}x; ` +
        `after (spread ${(s.sampleBytes / 1e6).toFixed(2)} MB): negotiate ${s.negotiateSeconds.toFixed(3)} s, end to end ${s.totalSeconds.toFixed(2)} s = ${(raw / s.totalSeconds).toFixed(2)}x`
      );
    });
    const negotiateBefore = median(rounds.map((r) => r.before.negotiateSeconds));
    const negotiateAfter = median(rounds.map((r) => r.service.negotiateSeconds));
    const totalBefore = median(rounds.map((r) => r.before.totalSeconds));
    const totalBeforeRatio = median(rounds.map((r) => r.raw / r.before.totalSeconds));
    const raw = median(rounds.map((r) => r.raw));
    const write = median(rounds.map((r) => r.service.writeSeconds));
    const total = median(rounds.map((r) => r.service.totalSeconds));
    const writeRatio = median(rounds.map((r) => r.raw / r.service.writeSeconds));
    const totalRatio = median(rounds.map((r) => r.raw / r.service.totalSeconds));
    // Other work on the machine only ever adds time, so the fastest run of each is the best estimate
    // of what it costs on its own.
    const bestRaw = Math.min(...rounds.map((r) => r.raw));
    const bestWrite = Math.min(...rounds.map((r) => r.service.writeSeconds));
    const bestTotal = Math.min(...rounds.map((r) => r.service.totalSeconds));
    process.stdout.write(
      `\nLakeport ingest benchmark: ${rows.toLocaleString()} rows, ${mb.toFixed(1)} MB of CSV (node ${process.version}, ${cores} cores, ${REPEAT} rounds, client ${CLIENT}, metadata in ${session.database}, load now ${load()})\n` +
        `${lines.join('\n')}\n` +
        `median raw DuckDB COPY read_csv -> parquet: ${raw.toFixed(2)} s, ${(mb / raw).toFixed(1)} MB/s\n` +
        `median service POST /data (stream + convert + stage): ${write.toFixed(2)} s, ${(mb / write).toFixed(1)} MB/s; median ratio ${writeRatio.toFixed(2)}x raw DuckDB\n` +
        `median service end to end (negotiate + accept + data + commit): ${total.toFixed(2)} s, ${(mb / total).toFixed(1)} MB/s; median ratio ${totalRatio.toFixed(2)}x raw DuckDB\n` +
        `sampling, median of ${REPEAT}: negotiate before (head 1 MiB) ${negotiateBefore.toFixed(3)} s, after (spread 1 MiB) ${negotiateAfter.toFixed(3)} s; ` +
        `end to end before ${totalBefore.toFixed(2)} s = ${totalBeforeRatio.toFixed(2)}x raw, after ${total.toFixed(2)} s = ${totalRatio.toFixed(2)}x raw (after/before ${(total / totalBefore).toFixed(3)}); ` +
        `best: negotiate before ${Math.min(...rounds.map((r) => r.before.negotiateSeconds)).toFixed(3)} s, after ${Math.min(...rounds.map((r) => r.service.negotiateSeconds)).toFixed(3)} s; ` +
        `end to end before ${Math.min(...rounds.map((r) => r.before.totalSeconds)).toFixed(2)} s, after ${Math.min(...rounds.map((r) => r.service.totalSeconds)).toFixed(2)} s\n` +
        `best of ${REPEAT}: raw ${bestRaw.toFixed(2)} s; POST /data ${bestWrite.toFixed(2)} s = ${(bestRaw / bestWrite).toFixed(2)}x; end to end ${bestTotal.toFixed(2)} s = ${(bestRaw / bestTotal).toFixed(2)}x\n` +
        `parquet written: ${(rounds[0].service.parquetBytes / 1e6).toFixed(1)} MB in ${rounds[0].service.parts} part(s); peak server memory (VmHWM): ${peak ? `${(peak / 1e6).toFixed(0)} MB` : 'n/a'}\n`,
    );
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
}

async function countRows(file: string): Promise<number> {
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  const n = Number((await c.runAndReadAll(`SELECT count(*) FROM read_csv('${file.replace(/'/g, "''")}')`)).getRows()[0][0]);
  c.closeSync();
  db.closeSync();
  return n;
}
