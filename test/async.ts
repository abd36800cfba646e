/** Small helpers for tests of asynchronous code. */

/** The rejection of a promise (fails the test when it resolves). */
export async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

/** A stream's whole content as UTF-8 text. */
export async function streamText(body: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Every item of an async iterable, in order. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/**
 * A step of an end-to-end scenario, run once on first use: each test awaits the steps it builds on,
 * so any test runs alone and in any order. A step that failed fails every test that needs it, with
 * its own error.
 */
export function once<T>(step: () => Promise<T>): () => Promise<T> {
  let done: Promise<T> | undefined;
  return () => (done ??= step());
}

/** Milliseconds until `holds` is true (polled every 50 ms); fails past `ms`. */
export async function within(ms: number, holds: () => Promise<boolean>): Promise<number> {
  const start = Date.now();
  for (;;) {
    if (await holds()) return Date.now() - start;
    if (Date.now() - start > ms) throw new Error(`still not so after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
