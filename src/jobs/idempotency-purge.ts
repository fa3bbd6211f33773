import type { Database } from '../db/database.js'
import type { Clock } from '../lib/clock.js'
import { purgeExpiredRecords } from '../modules/idempotency/store.js'
import type { PeriodicTask } from './runner.js'

/** Deletes idempotency records past their retention (IDEMPOTENCY_TTL_SECONDS). */
export function idempotencyPurge(deps: { db: Database, clock: Clock }, everyMs = 60_000): PeriodicTask {
  return {
    name: 'idempotency-purge',
    everyMs,
    async run() {
      await purgeExpiredRecords(deps.db, deps.clock.now())
    },
  }
}
