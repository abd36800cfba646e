/**
 * The child process of ProcessQueryEngine (query-host.ts): runs queries on its own sandbox pool.
 * It exits when the server disconnects; it reads no environment beyond what Node itself needs.
 */
import path from 'node:path';
import { InlineQueryEngine, toWire, type EngineOptions, type QueryRun } from './query-engine.ts';
import type { FromChild } from './query-host.ts';
import type { InterruptReason } from './sandbox.ts';

type Message =
  | { type: 'init'; engine: EngineOptions; pooled: boolean }
  | { type: 'run'; id: number; request: Parameters<InlineQueryEngine['run']>[0] }
  | { type: 'interrupt'; id: number; reason: InterruptReason }
  | { type: 'stats'; id: number };

let engine: InlineQueryEngine | undefined;
const runs = new Map<number, QueryRun>();

function reply(message: FromChild) {
  if (process.connected) process.send!(message);
}

process.on('message', (message: Message) => {
  if (message.type === 'init') {
    // Spill files go to a directory named after this process, which the server removes if it dies.
    const tempDirectory = message.engine.tempDirectory && path.join(message.engine.tempDirectory, String(process.pid));
    engine = new InlineQueryEngine({ ...message.engine, tempDirectory }, message.pooled ? {} : { maxIdle: 0 });
    return;
  }
  if (message.type === 'interrupt') return runs.get(message.id)?.interrupt(message.reason);
  if (message.type === 'stats') {
    const id = message.id;
    void (engine ? engine.stats() : Promise.resolve({ idle: 0, leased: 0 })).then((stats) => reply({ type: 'stats', id, stats: { ...stats, processResidentBytes: process.memoryUsage.rss() } }));
    return;
  }
  const run = engine!.run(message.request);
  runs.set(message.id, run);
  run.done.then(
    (result) => reply({ type: 'done', id: message.id, result }),
    (error: unknown) => reply({ type: 'failed', id: message.id, error: toWire(error) }),
  ).finally(() => runs.delete(message.id));
});

process.on('disconnect', () => {
  for (const run of runs.values()) run.interrupt('cancelled');
  void engine?.close().finally(() => process.exit(0));
  if (!engine) process.exit(0);
});
