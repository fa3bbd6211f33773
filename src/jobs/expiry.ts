import type { Database } from '../db/database.js'
import { type Clock, toTimestamp } from '../lib/clock.js'
import { recordEvent } from '../modules/events/outbox.js'
import * as mandates from '../modules/mandates/repository.js'
import { revokeMandatesOfWishes, toMandate } from '../modules/mandates/service.js'
import { adjustWishCounts, type CountChanges } from '../modules/wishes/counts.js'
import * as wishes from '../modules/wishes/repository.js'
import { toWish } from '../modules/wishes/service.js'
import type { PeriodicTask } from './runner.js'

const BATCH = 200

/**
 * Stores `expired` on wishes and mandates whose time has passed, with their events (a wish's is
 * wish.updated: the contract has no wish.expired), and revokes any mandate still active on a lapsed
 * wish. Readers already see them expired; this makes the status and the event stream agree. The
 * updates are conditional, so processes sweeping at once never expire, or announce, one object twice.
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
          const lapsedWishes: wishes.WishRow[] = []
          const moved = new Map<string, CountChanges>()
          for (const { row, was } of await wishes.expireDue(trx, db.dialect, now, BATCH)) {
            lapsedWishes.push(row)
            const changes = moved.get(row.account_id) ?? {}
            changes[was] = (changes[was] ?? 0) - 1
            changes.expired = (changes.expired ?? 0) + 1
            moved.set(row.account_id, changes)
          }
          // Accounts in order, like the counters within one: counter locks are always taken in one order.
          for (const accountId of [...moved.keys()].sort()) await adjustWishCounts(trx, accountId, moved.get(accountId)!)
          for (const row of lapsedWishes) {
            await recordEvent(trx, { accountId: row.account_id, type: 'wish.updated', object: toWish(row, now), requestId: null, createdAt: now })
          }
          // A lapsed wish takes its mandates with it, as a cancelled one does. A mandate made since
          // mandates were capped at their wish's deadline has lapsed with it and is expired below
          // instead; this catches those that outlived their wish (older data).
          for (const accountId of [...moved.keys()].sort()) {
            const ids = lapsedWishes.filter((row) => row.account_id === accountId).map((row) => row.id)
            await revokeMandatesOfWishes(trx, accountId, ids, null, now)
          }
          const lapsedMandates = await mandates.expireDue(trx, now, BATCH)
          for (const row of lapsedMandates) {
            await recordEvent(trx, { accountId: row.account_id, type: 'mandate.expired', object: toMandate(row, now), requestId: null, createdAt: now })
          }
          return Math.max(lapsedWishes.length, lapsedMandates.length)
        })
        if (expired < BATCH) return
      }
    },
  }
}
