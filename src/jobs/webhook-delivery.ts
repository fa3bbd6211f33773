import type { Config } from '../config.js'
import type { Database } from '../db/database.js'
import { type Clock, toTimestamp } from '../lib/clock.js'
import { newId } from '../lib/ids.js'
import { DELIVER_JOB, type DeliverPayload } from '../modules/events/outbox.js'
import { findEventById } from '../modules/events/repository.js'
import { toEvent } from '../modules/events/service.js'
import * as endpoints from '../modules/webhooks/repository.js'
import { retryDelayMs } from '../modules/webhooks/retry-schedule.js'
import { send } from '../modules/webhooks/sender.js'
import type { JobHandler } from './runner.js'

export interface DeliveryOutcome {
  outcome: 'delivered' | 'retrying' | 'failed' | 'disabled' | 'dropped'
}

/**
 * Delivers one event to one endpoint. The HTTP attempt happens outside any transaction; its record,
 * the next retry (or the job's end) and, on 410 Gone, the endpoint's disabling then commit together.
 * At least once: a process that dies mid-attempt leaves the job to be retried when its lease ends.
 */
export function webhookDeliveryHandler(
  deps: { db: Database, clock: Clock, config: Pick<Config, 'webhookAllowPrivate' | 'webhookRetryScale'> },
  onOutcome: (outcome: DeliveryOutcome['outcome']) => void = () => {},
): Record<string, JobHandler> {
  const { db, clock, config } = deps
  return {
    [DELIVER_JOB]: async (job) => {
      const payload = job.payload as unknown as DeliverPayload
      const endpoint = await endpoints.findEndpointById(db.kysely, payload.endpoint_id)
      const event = await findEventById(db.kysely, payload.event_id)
      // Deleted or disabled endpoint, or an event past retention: nothing left to deliver.
      if (!endpoint || endpoint.status !== 'enabled' || !event) {
        onOutcome('dropped')
        return undefined
      }
      const result = await send({
        url: endpoint.url,
        secret: endpoint.secret,
        eventId: event.id,
        body: JSON.stringify(toEvent(event)),
        now: clock.now(),
        allowPrivate: config.webhookAllowPrivate,
      })
      return job.commit(async (trx) => {
        const nowDate = clock.now()
        const now = toTimestamp(nowDate)
        const attempt = (await endpoints.countAttempts(trx, endpoint.id, event.id)) + 1
        const status = result.statusCode
        const delivered = status !== null && status >= 200 && status < 300
        const gone = status === 410
        const delay = delivered || gone ? undefined : retryDelayMs(attempt, config.webhookRetryScale, status === 429 || status === 503 ? result.retryAfterSeconds : null)
        const next = delay === undefined ? undefined : new Date(nowDate.getTime() + delay)
        await endpoints.insertAttempt(trx, {
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
          next_retry_at: next ? toTimestamp(next) : null,
          created_at: now,
        })
        if (gone) await endpoints.disableEndpoint(trx, endpoint.id, `The endpoint answered 410 Gone at ${now}`, now)
        onOutcome(delivered ? 'delivered' : gone ? 'disabled' : next ? 'retrying' : 'failed')
        return next
      })
    },
  }
}
