import type { Database } from '../db/database.js'
import { foldEventCounts } from '../modules/events/repository.js'
import { foldPaymentCounts } from '../modules/payments/repository.js'
import { foldAttemptCounts } from '../modules/webhooks/repository.js'
import type { PeriodicTask } from './runner.js'

/**
 * Folds the count changes of payments (migration 0012), events (0013) and delivery attempts (0014) into
 * their counters (db/counters.ts), so that a list's `meta.total` sums a few rows however many the account
 * has. Often, so that few changes wait.
 */
export function countFold(deps: { db: Database }, everyMs = 1_000): PeriodicTask {
  return {
    name: 'count-fold',
    everyMs,
    async run() {
      await foldPaymentCounts(deps.db)
      await foldEventCounts(deps.db)
      await foldAttemptCounts(deps.db)
    },
  }
}
