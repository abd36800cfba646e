import type { FastifyBaseLogger, FastifyInstance } from 'fastify';

/** One dependency's check: resolves when it answers; `signal` aborts what is still under way when the time is up. */
export type ReadinessCheck = (signal: AbortSignal) => Promise<void>;

/** How long each check may take before it counts as failed (`timeout`). */
export const READINESS_TIMEOUT_MS = 2_000;

type Outcome = 'ok' | 'failed' | 'timeout';

/**
 * GET /readyz beside /healthz (docs/deploy.md, "Health and readiness"): 200 `{status: "ok", checks}`
 * when every dependency answers within READINESS_TIMEOUT_MS, else 503 `{status: "unavailable",
 * checks}` naming which failed (`failed` or `timeout`); why is logged under the request's id, never
 * answered (an address or a bucket is none of a caller's business). No authentication, like
 * /healthz. Probes that arrive while a check runs share its answer.
 */
export function readinessRoute(app: FastifyInstance, checks: Record<string, ReadinessCheck>, timeoutMs = READINESS_TIMEOUT_MS): void {
  let running: Promise<Record<string, Outcome>> | undefined;
  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    running ??= probe(checks, timeoutMs, request.log).finally(() => (running = undefined));
    const outcomes = await running;
    const ready = Object.values(outcomes).every((o) => o === 'ok');
    return reply.status(ready ? 200 : 503).send({ status: ready ? 'ok' : 'unavailable', checks: outcomes });
  });
}

async function probe(checks: Record<string, ReadinessCheck>, timeoutMs: number, log: FastifyBaseLogger): Promise<Record<string, Outcome>> {
  const outcomes = await Promise.all(
    Object.entries(checks).map(async ([name, check]): Promise<[string, Outcome]> => {
      const abort = new AbortController();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
      try {
        const outcome = await Promise.race([check(abort.signal).then(() => 'ok' as const), late]);
        if (outcome === 'timeout') {
          abort.abort();
          log.warn({ check: name, timeoutMs }, 'readiness check timed out');
        }
        return [name, outcome];
      } catch (error) {
        log.warn({ err: error, check: name }, 'readiness check failed');
        return [name, 'failed'];
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return Object.fromEntries(outcomes);
}
