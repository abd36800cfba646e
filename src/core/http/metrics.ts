import type { FastifyInstance, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import { safeEqual } from '../crypto/index.ts';
import { appError } from '../errors/index.ts';
import type { AdminToken } from './admin-token.ts';

/**
 * GET /metrics in Prometheus's text format (prom-client), docs/deploy.md "Metrics". Every label has
 * a bounded set of values: a route is its pattern (`/jobs/api/v1/jobs/:identifier/status`, never
 * the URL; `unmatched` for a request no route took), a method one of HTTP's, a status a number.
 * No label names a tenant (workspace, identity, account).
 */

/** CPU, memory, event loop and GC of the process: one set per process, however many apps it builds (tests build many). */
let processRegistry: Registry | undefined;

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export class Metrics {
  /** Where the services' own metrics are registered (app-metrics.ts). */
  readonly registry = new Registry();
  private readonly requests = new Counter({ name: 'lakeport_http_requests_total', help: 'HTTP requests answered, by method, route pattern and status', labelNames: ['method', 'route', 'status'], registers: [this.registry] });
  private readonly durations = new Histogram({
    name: 'lakeport_http_request_duration_seconds',
    help: 'Time from a request arriving to its answer sent, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  constructor() {
    if (!processRegistry) {
      processRegistry = new Registry();
      collectDefaultMetrics({ register: processRegistry });
    }
  }

  /** Counts and times every answer; on the root instance, before any route is registered. */
  instrument(app: FastifyInstance): void {
    app.addHook('onResponse', async (request, reply) => {
      const labels = { method: METHODS.has(request.method) ? request.method : 'OTHER', route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) };
      this.requests.inc(labels);
      this.durations.observe(labels, reply.elapsedTime / 1000);
    });
  }

  /** GET /metrics for whoever `access` lets in. */
  route(app: FastifyInstance, access: MetricsAccess): void {
    app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
      access.require(request);
      const text = (await processRegistry!.metrics()) + (await this.registry.metrics());
      return reply.type(this.registry.contentType).send(text);
    });
  }
}

/**
 * Who may read /metrics: the admin token (`x-admin-token`), or `Authorization: Bearer
 * <LAKEPORT_METRICS_TOKEN>` when that is set (what a Prometheus scrape job sends, with nothing else
 * it can do). Without either: 401. A wrong x-admin-token is refused and throttled as everywhere.
 */
export class MetricsAccess {
  constructor(
    private readonly adminToken: AdminToken,
    private readonly metricsToken: string | undefined,
  ) {}

  require(request: FastifyRequest): void {
    if (this.adminToken.presentIn(request)) return;
    const given = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    if (this.metricsToken !== undefined && given !== undefined && safeEqual(given, this.metricsToken)) return;
    const how = this.metricsToken === undefined ? 'the x-admin-token header (set LAKEPORT_METRICS_TOKEN to give a scraper a token of its own)' : 'Authorization: Bearer <LAKEPORT_METRICS_TOKEN> or the x-admin-token header';
    throw appError('UNAUTHORIZED', `GET /metrics needs ${how}`, { headers: { 'www-authenticate': 'Bearer realm="lakeport"' } });
  }
}
