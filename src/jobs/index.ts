import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { Database } from '../db/database.js'
import type { Clock } from '../lib/clock.js'
import type { PaymentService } from '../modules/payments/service.js'
import { createWebhookService } from '../modules/webhooks/service.js'
import { createWishExpiry } from '../modules/wishes/service.js'
import { eventRetention } from './event-retention.js'
import { expirySweep } from './expiry.js'
import { idempotencyPurge } from './idempotency-purge.js'
import { noncePurge } from './nonce-purge.js'
import { countFold } from './count-fold.js'
import { createJobRunner } from './runner.js'
import { settlementHandler } from './settlement.js'
import { type DeliveryOutcome, webhookDeliveryHandler } from './webhook-delivery.js'

export interface BackgroundDeps {
  db: Database
  clock: Clock
  config: Pick<Config, 'webhookAllowPrivate' | 'webhookRetryScale'>
  logger: Pick<Logger, 'warn' | 'error' | 'info'>
  payments: Pick<PaymentService, 'settleStep'>
  pollIntervalMs?: number
  keepProcessAlive?: boolean
  onDelivery?: (outcome: DeliveryOutcome['outcome']) => void
}

/** All background work of a Wishpay process: settlement, webhook delivery, expiry, purges. */
export function createBackgroundWork(deps: BackgroundDeps) {
  return createJobRunner({
    db: deps.db,
    clock: deps.clock,
    logger: deps.logger,
    handlers: { ...settlementHandler(deps.payments), ...webhookDeliveryHandler(createWebhookService(deps), deps.onDelivery) },
    periodic: [expirySweep(createWishExpiry(deps)), idempotencyPurge(deps), noncePurge(deps), eventRetention(deps), countFold(deps)],
    ...(deps.pollIntervalMs !== undefined ? { pollIntervalMs: deps.pollIntervalMs } : {}),
    keepProcessAlive: deps.keepProcessAlive ?? false,
  })
}
