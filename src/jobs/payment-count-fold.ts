import type { Database } from '../db/database.js'
import { foldPaymentCounts } from '../modules/payments/repository.js'
import type { PeriodicTask } from './runner.js'

/**
 * Folds the payments' count changes into their counters (migration 0012), so that a list's
 * `meta.total` sums a few rows however many payments the account has. Often, so that few wait.
 */
export function paymentCountFold(deps: { db: Database }, everyMs = 1_000): PeriodicTask {
  return {
    name: 'payment-count-fold',
    everyMs,
    async run() {
      await foldPaymentCounts(deps.db)
    },
  }
}
