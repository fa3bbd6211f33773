import type { Logger } from 'pino'
import type { Database } from '../db/database.js'
import type { Clock } from '../lib/clock.js'
import type { PaymentService } from '../modules/payments/service.js'
import { expirySweep } from './expiry.js'
import { idempotencyPurge } from './idempotency-purge.js'
import { createJobRunner } from './runner.js'
import { settlementHandler } from './settlement.js'

export interface BackgroundDeps {
  db: Database
  clock: Clock
  logger: Pick<Logger, 'warn' | 'error' | 'info'>
  payments: Pick<PaymentService, 'settleStep'>
  pollIntervalMs?: number
  keepProcessAlive?: boolean
}

/** All background work of a Wishpay process: settlement jobs, expiry, idempotency purge. */
export function createBackgroundWork(deps: BackgroundDeps) {
  return createJobRunner({
    db: deps.db,
    clock: deps.clock,
    logger: deps.logger,
    handlers: { ...settlementHandler(deps.payments) },
    periodic: [expirySweep(deps), idempotencyPurge(deps)],
    ...(deps.pollIntervalMs !== undefined ? { pollIntervalMs: deps.pollIntervalMs } : {}),
    keepProcessAlive: deps.keepProcessAlive ?? false,
  })
}
