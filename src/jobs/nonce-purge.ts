import type { Database } from '../db/database.js'
import type { Clock } from '../lib/clock.js'
import { purgeLapsedNonces } from '../modules/ap2/nonces.js'
import type { PeriodicTask } from './runner.js'

/** Deletes AP2 nonces a day after they lapsed: they can never pay, and the table would only grow. */
export function noncePurge(deps: { db: Database, clock: Clock }, everyMs = 60_000): PeriodicTask {
  return {
    name: 'ap2-nonce-purge',
    everyMs,
    async run() {
      await purgeLapsedNonces(deps.db, deps.clock.now())
    },
  }
}
