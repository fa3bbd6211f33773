import { sql } from 'kysely'
import type { Executor } from '../../db/database.js'
import type { WishListFilter } from './repository.js'
import type { WishStatus } from './transitions.js'

/** Counter rows per account and status; more slots, fewer writers of one account waiting on one row. */
const SLOTS = 8

export type CountChanges = Partial<Record<WishStatus, number>>

/**
 * Adds to the account's stored-status counters in the writer's transaction, so a count is exact
 * whenever the wishes it counts are committed. Rows are written in status order, one slot per call:
 * two transactions always take counter locks in the same order and never deadlock on them.
 */
export async function adjustWishCounts(trx: Executor, accountId: string, changes: CountChanges): Promise<void> {
  const slot = Math.floor(Math.random() * SLOTS)
  const rows = Object.entries(changes)
    .filter(([, n]) => n !== 0)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([status, n]) => ({ account_id: accountId, status, slot, n: n! }))
  if (rows.length === 0) return
  await trx.insertInto('wish_counts').values(rows)
    .onConflict((oc) => oc.columns(['account_id', 'status', 'slot'])
      .doUpdateSet((eb) => ({ n: eb(eb.ref('wish_counts.n'), '+', eb.ref('excluded.n')) })))
    .execute()
}

/** Open statuses whose lapsed wishes read as expired; they move from the first count to the second. */
const OPEN: WishStatus[] = ['active', 'pending']

/**
 * The number of wishes a list with this filter matches: the stored counters, corrected for open wishes
 * past their expires_at that the sweep has not stored as expired yet (few, found through the partial
 * lapse index). One statement, so both parts read the same snapshot.
 */
export async function countWishes(db: Executor, filter: WishListFilter): Promise<number> {
  const { accountId, status, now } = filter
  const lapsedFrom = status === 'expired' ? OPEN : status !== undefined && OPEN.includes(status) ? [status] : []
  const row = await db.selectNoFrom((eb) => [
    eb.selectFrom('wish_counts').select((s) => s.fn.sum<number | string | null>('n').as('n'))
      .where('account_id', '=', accountId)
      .$if(status !== undefined, (q) => q.where('status', '=', status!))
      .as('stored'),
    lapsedFrom.length === 0
      ? sql<number>`0`.as('lapsed')
      : eb.selectFrom('wishes').select((s) => s.fn.countAll<number | string>().as('n'))
        .where('account_id', '=', accountId).where('status', 'in', lapsedFrom)
        .where('expires_at', 'is not', null).where('expires_at', '<=', now)
        .as('lapsed'),
  ]).executeTakeFirstOrThrow()
  const stored = Number(row.stored ?? 0)
  const lapsed = Number(row.lapsed ?? 0)
  return status === 'expired' ? stored + lapsed : stored - lapsed
}
