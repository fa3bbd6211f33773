import type { FastifyInstance } from 'fastify'
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { Database } from '../db/database.js'
import { countPaymentsByStatus } from '../modules/metrics/repository.js'
import { stats as queueStats } from '../modules/queue/repository.js'
import type { Clock } from '../lib/clock.js'
import { toTimestamp } from '../lib/clock.js'
import { AppError } from '../lib/errors.js'
import { RequestHistogram } from './request-histogram.js'

export interface Metrics {
  registry: Registry
  /** Counts webhook delivery outcomes of this process's job runner. */
  webhookDelivery(outcome: string): void
  /** Stops listening to the database: the app that registered these metrics calls it on close, whoever made them. */
  close(): void
}

/** Writes a shared commit made durable: 1 is a write that committed alone. */
const COMMIT_WRITES_BUCKETS = [1, 2, 4, 8, 16, 32, 64]
const COMMIT_SECONDS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]

/**
 * Prometheus metrics. Request timings and webhook outcomes are counted in-process (Prometheus sums
 * them across processes); payments by status, queue depth and lag are read from the database at scrape
 * time, so every process reports the same shared truth.
 */
export function createMetrics(deps: { db: Database, clock: Clock }): Metrics {
  const { db, clock } = deps
  const registry = new Registry()
  const webhookDeliveries = new Counter({
    name: 'wishpay_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome (delivered, retrying, failed, disabled, dropped)',
    labelNames: ['outcome'],
    registers: [registry],
  })
  new Gauge({
    name: 'wishpay_payments',
    help: 'Payments by status',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      this.reset()
      for (const row of await countPaymentsByStatus(db.kysely)) this.set({ status: row.status }, row.n)
    },
  })
  new Gauge({
    name: 'wishpay_job_queue_depth',
    help: 'Background jobs due now',
    registers: [registry],
    async collect() {
      this.set((await queueStats(db.kysely, toTimestamp(clock.now()))).depth)
    },
  })
  new Gauge({
    name: 'wishpay_job_queue_lag_seconds',
    help: 'How long the oldest due job has waited past its run time',
    registers: [registry],
    async collect() {
      this.set((await queueStats(db.kysely, toTimestamp(clock.now()))).lagSeconds)
    },
  })
  new Gauge({
    name: 'wishpay_db_pool_connections',
    help: 'Database pool connections by state (total, idle, waiting requests)',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const pool = db.poolStats()
      this.set({ state: 'total' }, pool.total)
      this.set({ state: 'idle' }, pool.idle)
      this.set({ state: 'waiting' }, pool.waiting)
    },
  })
  // Group commit, observed where it happens (db/shared-commits.ts): how full the shared commits are and
  // how long each takes, which is most of a write's latency once the writes queue for it.
  const commitWrites = new Histogram({
    name: 'wishpay_db_commit_writes',
    help: 'Writes made durable by one shared commit (group commit)',
    buckets: COMMIT_WRITES_BUCKETS,
    registers: [registry],
  })
  const commitSeconds = new Histogram({
    name: 'wishpay_db_commit_seconds',
    help: 'How long a shared commit took: SQLite from its BEGIN IMMEDIATE to its COMMIT, its writes\' own work included; PostgreSQL from sending the transaction (waiting for a pooled connection included) to its answer',
    buckets: COMMIT_SECONDS_BUCKETS,
    registers: [registry],
  })
  const stopListening = db.sharedCommits.listen((writes, seconds) => {
    commitWrites.observe(writes)
    commitSeconds.observe(seconds)
  })
  return { registry, webhookDelivery: (outcome) => webhookDeliveries.inc({ outcome }), close: stopListening }
}

/**
 * 401 for /metrics: it takes the METRICS_TOKEN bearer token, never an API key, and says so. The code is
 * the one for a missing or unusable credential (authentication_required), as the rest of the API uses.
 */
function metricsTokenRequired(sent: boolean): AppError {
  const how = 'send the METRICS_TOKEN bearer token as "Authorization: Bearer <METRICS_TOKEN>" (API keys are not accepted here)'
  return new AppError({
    status: 401,
    type: 'authentication_error',
    code: 'authentication_required',
    message: sent ? `The metrics token is not valid: ${how}` : `Authentication required: ${how}`,
    headers: { 'WWW-Authenticate': 'Bearer realm="wishpay-metrics"' },
  })
}

/** Request-duration histogram on every request, and GET /metrics (open, or behind METRICS_TOKEN). */
export function registerMetrics(app: FastifyInstance, metrics: Metrics, token: string | undefined): void {
  app.addHook('onClose', (_instance, done) => {
    metrics.close()
    done()
  })
  const duration = new RequestHistogram('wishpay_http_request_duration_seconds', 'HTTP request duration by route template, method and status',
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], metrics.registry)
  app.addHook('onResponse', (request, reply, done) => {
    duration.observe(duration.series(request.routeOptions.url ?? 'not_found', request.method, reply.statusCode), reply.elapsedTime / 1000)
    done()
  })

  app.get('/metrics', {
    schema: {
      operationId: 'getMetrics',
      summary: 'Prometheus metrics',
      description: 'Prometheus text format. Open, unless METRICS_TOKEN is set: then send it as `Authorization: Bearer <token>`.',
      tags: ['System'],
      security: [],
      response: {
        200: {
          description: 'Prometheus exposition text',
          content: {
            'text/plain': {
              schema: {
                type: 'string',
                examples: ['# HELP wishpay_payments Payments by status\n# TYPE wishpay_payments gauge\nwishpay_payments{status="succeeded"} 42\n'],
              },
            },
          },
        },
        401: { description: 'METRICS_TOKEN is set and was not sent', content: { 'application/json': { schema: { $ref: 'Error' } } } },
      },
    },
  }, async (request, reply) => {
    if (token !== undefined && request.headers.authorization !== `Bearer ${token}`) throw metricsTokenRequired(request.headers.authorization !== undefined)
    const text = await metrics.registry.metrics()
    return reply.type(metrics.registry.contentType).send(text)
  })
}
