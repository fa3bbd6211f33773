import type { Database } from '../db/database.js'
import { type Clock, toTimestamp } from '../lib/clock.js'
import { purgeExpired } from '../modules/idempotency/repository.js'
import type { PeriodicTask } from './runner.js'

/** Deletes idempotency records past their retention (IDEMPOTENCY_TTL_SECONDS). */
export function idempotencyPurge(deps: { db: Database, clock: Clock }, everyMs = 60_000): PeriodicTask {
  return {
    name: 'idempotency-purge',
    everyMs,
    async run() {
      await purgeExpired(deps.db.kysely, toTimestamp(deps.clock.now()))
    },
  }
}
