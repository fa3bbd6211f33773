import type { Database } from '../db/database.js'
import { type Clock, toTimestamp } from '../lib/clock.js'
import { recordEvent } from '../modules/events/outbox.js'
import * as mandates from '../modules/mandates/repository.js'
import { toMandate } from '../modules/mandates/service.js'
import * as wishes from '../modules/wishes/repository.js'
import { toWish } from '../modules/wishes/service.js'
import type { PeriodicTask } from './runner.js'

const BATCH = 200

/**
 * Stores `expired` on wishes and mandates whose time has passed, with their events (a wish's is
 * wish.updated: the contract has no wish.expired). Readers already see them expired; this makes the
 * status and the event stream agree. The update is conditional, so processes sweeping at once never
 * expire, or announce, one object twice.
 */
export function expirySweep(deps: { db: Database, clock: Clock }, everyMs = 1000): PeriodicTask {
  const { db, clock } = deps
  return {
    name: 'expiry',
    everyMs,
    async run() {
      for (;;) {
        const expired = await db.kysely.transaction().execute(async (trx) => {
          const now = toTimestamp(clock.now())
          const lapsedWishes = await wishes.expireDue(trx, now, BATCH)
          for (const row of lapsedWishes) {
            await recordEvent(trx, { accountId: row.account_id, type: 'wish.updated', object: toWish(row, now), requestId: null, createdAt: now })
          }
          const lapsedMandates = await mandates.expireDue(trx, now, BATCH)
          for (const row of lapsedMandates) {
            await recordEvent(trx, { accountId: row.account_id, type: 'mandate.expired', object: toMandate(row, now), requestId: null, createdAt: now })
          }
          return lapsedWishes.length + lapsedMandates.length
        })
        if (expired < BATCH) return
      }
    },
  }
}
