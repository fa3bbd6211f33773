import type { Config } from '../../config.js'
import type { Database, Trx } from '../../db/database.js'
import { inTransaction } from '../../db/transaction.js'
import { errors } from '../../lib/errors.js'
import { listPage, type PageInput } from '../../lib/paging.js'
import { type Clock, toTimestamp } from '../../lib/clock.js'
import { newId, newWebhookSecret } from '../../lib/ids.js'
import type { RequestContext } from '../../lib/request-context.js'
import { DELIVER_JOB, type DeliverPayload } from '../events/outbox.js'
import { enqueue } from '../queue/repository.js'
import { findEventById } from '../events/repository.js'
import { toEvent } from '../events/service.js'
import { urlProblem } from './address-policy.js'
import * as repo from './repository.js'
import { retryDelayMs } from './retry-schedule.js'
import { send } from './sender.js'
import type {
  CreatedWebhookEndpoint, CreateWebhookEndpointInput, DeliveryAttempt, DeliveryResend, UpdateWebhookEndpointInput, WebhookEndpoint,
} from './schemas.js'

function toEndpoint(row: repo.EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    description: row.description,
    enabled: row.status === 'enabled',
    disabled_reason: row.disabled_reason,
    created_at: row.created_at,
    updated_at: row.updated_at,
  }
}

function toAttempt(row: repo.AttemptRow): DeliveryAttempt {
  return {
    id: row.id,
    event_id: row.event_id,
    event_type: row.event_type,
    attempt: row.attempt,
    status_code: row.status_code,
    error: row.error,
    succeeded: row.succeeded === 1,
    duration_ms: row.duration_ms,
    next_retry_at: row.next_retry_at,
    created_at: row.created_at,
  }
}

/**
 * The most webhook endpoints one account may have, enabled or not (Stripe's limit too). Every event
 * of the account is written with a delivery job per subscribed endpoint, in the transaction of the
 * request that made it, so this bounds the work one request can cause.
 */
export const MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT = 16

export type DeliveryOutcome = 'delivered' | 'retrying' | 'failed' | 'disabled' | 'dropped'

/**
 * Runs a job's state change in the transaction that also ends the job, or schedules its next run when
 * the work returns a date (src/jobs/runner.ts JobContext.commit).
 */
export type JobCommit = (work: (trx: Trx) => Promise<Date | undefined>) => Promise<Date | undefined>

export function createWebhookService(deps: { db: Database, clock: Clock, config: Pick<Config, 'webhookAllowPrivate' | 'webhookRetryScale'> }) {
  const { db, clock, config } = deps

  async function checkUrl(url: string): Promise<void> {
    const problem = await urlProblem(url, config.webhookAllowPrivate)
    if (problem) throw errors.parameterInvalid('url', problem)
  }

  async function mustFind(ctx: RequestContext, id: string): Promise<repo.EndpointRow> {
    const row = await repo.findEndpoint(db.kysely, ctx.accountId, id)
    if (!row) throw errors.resourceMissing('webhook endpoint', id)
    return row
  }

  return {
    async create(ctx: RequestContext, input: CreateWebhookEndpointInput): Promise<CreatedWebhookEndpoint> {
      await checkUrl(input.url)
      const nowDate = clock.now()
      const now = toTimestamp(nowDate)
      const row: repo.EndpointRow = {
        id: newId('we', nowDate),
        account_id: ctx.accountId,
        url: input.url,
        events: JSON.stringify(input.events),
        description: input.description ?? null,
        secret: newWebhookSecret(),
        status: 'enabled',
        disabled_reason: null,
        created_at: now,
        updated_at: now,
      }
      await inTransaction(db, ctx, async (trx) => {
        if (!(await repo.insertEndpointWithinLimit(trx, row, MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT))) {
          throw errors.resourceLimitExceeded(`An account may have at most ${MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT} webhook endpoints, `
            + 'enabled or disabled; delete one you no longer need (DELETE /webhook_endpoints/:id) before creating another')
        }
      })
      return { ...toEndpoint(row), secret: row.secret }
    },

    async get(ctx: RequestContext, id: string): Promise<WebhookEndpoint> {
      return toEndpoint(await mustFind(ctx, id))
    },

    async list(ctx: RequestContext, query: PageInput) {
      return listPage(query, {
        resource: 'webhook endpoint',
        find: (id) => repo.findEndpoint(db.kysely, ctx.accountId, id),
        rows: (window) => repo.listEndpoints(db.kysely, ctx.accountId, window),
        total: () => repo.countEndpoints(db.kysely, ctx.accountId),
        map: toEndpoint,
      })
    },

    async update(ctx: RequestContext, id: string, input: UpdateWebhookEndpointInput): Promise<WebhookEndpoint> {
      const row = await mustFind(ctx, id)
      if (input.url !== undefined) await checkUrl(input.url)
      const changes: Partial<repo.EndpointRow> = {}
      if (input.url !== undefined && input.url !== row.url) changes.url = input.url
      if (input.events !== undefined && JSON.stringify(input.events) !== row.events) changes.events = JSON.stringify(input.events)
      if (input.description !== undefined && input.description !== row.description) changes.description = input.description
      if (input.enabled !== undefined && input.enabled !== (row.status === 'enabled')) {
        changes.status = input.enabled ? 'enabled' : 'disabled'
        changes.disabled_reason = input.enabled ? null : 'Disabled through the API'
      }
      if (Object.keys(changes).length === 0) return toEndpoint(row)
      changes.updated_at = toTimestamp(clock.now())
      await repo.updateEndpoint(db.kysely, ctx.accountId, id, changes)
      return toEndpoint({ ...row, ...changes })
    },

    /** Pending deliveries to a deleted endpoint are dropped when their turn comes. */
    async remove(ctx: RequestContext, id: string): Promise<void> {
      if (!(await repo.deleteEndpoint(db.kysely, ctx.accountId, id))) throw errors.resourceMissing('webhook endpoint', id)
    },

    async deliveries(ctx: RequestContext, id: string, query: PageInput) {
      await mustFind(ctx, id)
      return listPage(query, {
        resource: 'webhook delivery',
        find: (attemptId) => repo.findAttemptOfEndpoint(db.kysely, id, attemptId),
        rows: (window) => repo.listAttempts(db.kysely, id, window),
        total: () => repo.countAttemptsOfEndpoint(db.kysely, ctx.accountId, id),
        map: toAttempt,
      })
    },

    /**
     * Sends an attempt's event to its endpoint again: a new delivery job, due now, with the retries
     * left after its attempt number (the job's own, as any delivery). The endpoint must be enabled and
     * the event still kept.
     */
    async resend(ctx: RequestContext, attemptId: string): Promise<DeliveryResend> {
      // All in the request's transaction: with an idempotency key the request already has one.
      return inTransaction(db, ctx, async (trx) => {
        const attempt = await repo.findAttempt(trx, ctx.accountId, attemptId)
        if (!attempt) throw errors.resourceMissing('webhook delivery', attemptId)
        const endpoint = await repo.findEndpoint(trx, ctx.accountId, attempt.endpoint_id)
        if (!endpoint) throw errors.resourceMissing('webhook endpoint', attempt.endpoint_id)
        if (endpoint.status !== 'enabled') {
          throw errors.invalidStateTransition(`Webhook endpoint ${endpoint.id} is disabled; enable it (PUT /webhook_endpoints/${endpoint.id} with enabled: true) before resending`)
        }
        if (!(await findEventById(trx, attempt.event_id))) throw errors.resourceMissing('event', attempt.event_id)
        const nowDate = clock.now()
        const payload: DeliverPayload = { endpoint_id: endpoint.id, event_id: attempt.event_id }
        await enqueue(trx, { type: DELIVER_JOB, payload: { ...payload }, runAt: nowDate }, nowDate)
        return { resent: attempt.id, endpoint_id: endpoint.id, event_id: attempt.event_id, event_type: attempt.event_type, scheduled_at: toTimestamp(nowDate) }
      })
    },

    /**
     * Delivers one event to one endpoint (the webhook.deliver job). The HTTP attempt happens outside any
     * transaction; its record, the next retry (or the job's end) and, on 410 Gone, the endpoint's
     * disabling then commit together, through `commit`. At least once: a process that dies mid-attempt
     * leaves the job to be retried when its lease ends. Returns what became of the delivery and when
     * to run the job again (undefined: done).
     */
    async deliver(payload: DeliverPayload, commit: JobCommit): Promise<{ outcome: DeliveryOutcome, next: Date | undefined }> {
      const endpoint = await repo.findEndpointById(db.kysely, payload.endpoint_id)
      const event = await findEventById(db.kysely, payload.event_id)
      // Deleted or disabled endpoint, or an event past retention: nothing left to deliver.
      if (!endpoint || endpoint.status !== 'enabled' || !event) return { outcome: 'dropped', next: undefined }
      const result = await send({
        url: endpoint.url,
        secret: endpoint.secret,
        eventId: event.id,
        body: JSON.stringify(toEvent(event)),
        now: clock.now(),
        allowPrivate: config.webhookAllowPrivate,
      })
      let outcome: DeliveryOutcome = 'failed'
      const next = await commit(async (trx) => {
        const nowDate = clock.now()
        const now = toTimestamp(nowDate)
        const attempt = (await repo.countAttempts(trx, endpoint.id, event.id)) + 1
        const status = result.statusCode
        const delivered = status !== null && status >= 200 && status < 300
        const gone = status === 410
        const delay = delivered || gone ? undefined : retryDelayMs(attempt, config.webhookRetryScale, status === 429 || status === 503 ? result.retryAfterSeconds : null)
        const retryAt = delay === undefined ? undefined : new Date(nowDate.getTime() + delay)
        await repo.insertAttempt(trx, {
          id: newId('wha', nowDate),
          account_id: endpoint.account_id,
          endpoint_id: endpoint.id,
          event_id: event.id,
          event_type: event.type,
          attempt,
          status_code: status,
          error: result.error ?? (delivered ? null : `HTTP ${status}`),
          succeeded: delivered ? 1 : 0,
          duration_ms: result.durationMs,
          next_retry_at: retryAt ? toTimestamp(retryAt) : null,
          created_at: now,
        })
        if (gone) await repo.disableEndpoint(trx, endpoint.id, `The endpoint answered 410 Gone at ${now}`, now)
        outcome = delivered ? 'delivered' : gone ? 'disabled' : retryAt ? 'retrying' : 'failed'
        return retryAt
      })
      return { outcome, next }
    },
  }
}

export type WebhookService = ReturnType<typeof createWebhookService>
