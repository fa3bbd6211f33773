import type { Database } from '../db/database.js'
import { type Clock, toTimestamp } from '../lib/clock.js'
import { deleteOlderThan } from '../modules/events/repository.js'
import { deleteAttemptsOlderThan } from '../modules/webhooks/repository.js'
import type { PeriodicTask } from './runner.js'

export const EVENT_RETENTION_DAYS = 30
const BATCH = 1000

/** Deletes events, and webhook attempts, older than 30 days, in batches so no transaction grows large. */
export function eventRetention(deps: { db: Database, clock: Clock }, everyMs = 60_000): PeriodicTask {
  return {
    name: 'event-retention',
    everyMs,
    async run() {
      const before = toTimestamp(new Date(deps.clock.now().getTime() - EVENT_RETENTION_DAYS * 86_400_000))
      while ((await deleteOlderThan(deps.db, before, BATCH)) === BATCH) { /* next batch */ }
      while ((await deleteAttemptsOlderThan(deps.db, before, BATCH)) === BATCH) { /* next batch */ }
    },
  }
}
