import { type ExpressionBuilder, type SelectQueryBuilder, sql } from 'kysely'
import type { Executor } from '../../db/database.js'
import { forUpdate } from '../../db/dialect.js'
import { filteredList, listRows } from '../../db/paging.js'
import { fromTemplate, insertRows, shapeOf } from '../../db/query-template.js'
import { readQuery } from '../../db/reusable-query.js'
import type { DatabaseSchema, WishesTable } from '../../db/schema.js'
import { randomIndex } from '../../lib/ids.js'
import type { Window } from '../../lib/paging.js'
import type { WishStatus } from './transitions.js'

export type WishRow = WishesTable
export type WishChanges = Partial<Omit<WishRow, 'id' | 'account_id' | 'created_at'>>

/** The insert of a new wish, compiled once (db/query-template.ts). */
export function insertWishStatement(db: Executor, row: WishRow) {
  return insertRows(db, 'wishes', [row])
}

export function findWish(db: Executor, accountId: string, id: string): Promise<WishRow | undefined> {
  return db.selectFrom('wishes').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst()
}

/** Reads a wish and locks it for the rest of the transaction, so concurrent updates serialise. */
export function findWishForUpdate(trx: Executor, accountId: string, id: string) {
  const query = trx.selectFrom('wishes').selectAll().where('account_id', '=', accountId).where('id', '=', id)
  return forUpdate(trx, query).executeTakeFirst()
}

export async function updateWish(trx: Executor, accountId: string, id: string, changes: WishChanges): Promise<void> {
  await trx.updateTable('wishes').set(changes).where('account_id', '=', accountId).where('id', '=', id).execute()
}

export async function deleteWish(trx: Executor, accountId: string, id: string): Promise<void> {
  await trx.deleteFrom('wishes').where('account_id', '=', accountId).where('id', '=', id).execute()
}

/**
 * Filters on the status a reader sees: an open wish whose expires_at has passed counts as expired,
 * not as what is stored, so lists agree with GET.
 */
function statusFilter(status: WishStatus, now: string) {
  return (eb: ExpressionBuilder<DatabaseSchema, 'wishes'>) => {
    if (!comparesTime(status)) return eb('status', '=', status)
    if (status === 'active' || status === 'pending') {
      return eb.and([eb('status', '=', status), eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)])])
    }
    return eb.or([
      eb('status', '=', 'expired'),
      eb.and([eb('status', 'in', ['active', 'pending']), eb('expires_at', '<=', now)]),
    ])
  }
}

/** Whether statusFilter compares expires_at with the time for this status (otherwise `now` is unused). */
function comparesTime(status: WishStatus): boolean {
  return status === 'active' || status === 'pending' || status === 'expired'
}

export interface WishListFilter {
  accountId: string
  status?: WishStatus | undefined
  now: string
}

function filtered(db: Executor, filter: WishListFilter): SelectQueryBuilder<DatabaseSchema, 'wishes', object> {
  let query = db.selectFrom('wishes').where('account_id', '=', filter.accountId)
  if (filter.status !== undefined) query = query.where(statusFilter(filter.status, filter.now))
  return query
}

export function listWishes(db: Executor, filter: WishListFilter, window: Window) {
  const { accountId, status, now } = filter
  const timed = status !== undefined && comparesTime(status)
  return listRows(db, filteredList(`wishes ${status ?? ''}`, { accountId, now: timed ? now : undefined }, (slotted) =>
    filtered(db, { accountId: slotted.accountId, status, now: slotted.now! })), window)
}

/**
 * Stores `expired` on up to `limit` open wishes past their time; returns them as they are now, each with
 * the status it had (the counters move from it). The read locks the rows (PostgreSQL), so that status
 * cannot change before the update. Its status term is the partial expiry index's own predicate, in
 * literals: SQLite uses a partial index only when it can see that the query implies the predicate.
 */
export async function expireDue(trx: Executor, now: string, limit: number): Promise<{ row: WishRow, was: WishStatus }[]> {
  const due = await forUpdate(trx, trx.selectFrom('wishes').select(['id', 'status'])
    .where(sql<boolean>`status in ('active', 'pending')`).where('expires_at', '<=', now).limit(limit)).execute()
  if (due.length === 0) return []
  const was = new Map(due.map((wish) => [wish.id, wish.status as WishStatus]))
  const rows = await trx.updateTable('wishes').set({ status: 'expired', updated_at: now })
    .where('id', 'in', [...was.keys()]).where('status', 'in', ['active', 'pending'])
    .returningAll().execute()
  return rows.map((row) => ({ row, was: was.get(row.id)! }))
}

/** Counter rows per account and status; more slots, fewer writers of one account waiting on one row. */
const SLOTS = 8

export type CountChanges = Partial<Record<WishStatus, number>>

/**
 * Adds to the account's stored-status counters in the writer's transaction, so a count is exact
 * whenever the wishes it counts are committed. Rows are written in status order, one slot per call:
 * two transactions always take counter locks in the same order and never deadlock on them.
 */
export async function adjustWishCounts(trx: Executor, accountId: string, changes: CountChanges): Promise<void> {
  const statement = wishCountsStatement(trx, accountId, changes)
  if (statement) await trx.executeQuery(statement)
}

/** A counter slot, chosen at random for each change. */
export const countSlot = () => randomIndex(SLOTS)

/**
 * adjustWishCounts' statement (undefined when nothing changes) on `slot`, compiled once per set of
 * statuses.
 */
export function wishCountsStatement(db: Executor, accountId: string, changes: CountChanges, slot = countSlot()) {
  const rows = Object.entries(changes)
    .filter(([, n]) => n !== 0)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([status, n]) => ({ account_id: accountId, status, slot, n: n! }))
  if (rows.length === 0) return undefined
  return fromTemplate(db, shapeOf(['wish counts', ...rows.map((r) => r.status)]), rows.flatMap((r) => [r.account_id, r.slot, r.n]), (slots) =>
    db.insertInto('wish_counts').values(rows.map((r, i) => ({ account_id: slots[i * 3]!, status: r.status, slot: slots[i * 3 + 1] as unknown as number, n: slots[i * 3 + 2] as unknown as number })))
      .onConflict((oc) => oc.columns(['account_id', 'status', 'slot'])
        .doUpdateSet((eb) => ({ n: eb(eb.ref('wish_counts.n'), '+', eb.ref('excluded.n')) }))))
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
  // Compiled once per status (db/query-template.ts); the time is a value only where lapsed wishes are counted.
  const values = lapsedFrom.length === 0 ? [accountId] : [accountId, now]
  const query = fromTemplate(db, shapeOf(['wish count', status ?? '']), values, ([account, time]) => db.selectNoFrom((eb) => [
    eb.selectFrom('wish_counts').select((s) => s.fn.sum<number | string | null>('n').as('n'))
      .where('account_id', '=', account!)
      .$if(status !== undefined, (q) => q.where('status', '=', status!))
      .as('stored'),
    lapsedFrom.length === 0
      ? sql<number>`0`.as('lapsed')
      : eb.selectFrom('wishes').select((s) => s.fn.countAll<number | string>().as('n'))
        .where('account_id', '=', account!).where('status', 'in', lapsedFrom)
        .where('expires_at', 'is not', null).where('expires_at', '<=', time!)
        .as('lapsed'),
  ]))
  const [row] = await readQuery(db, query)
  const stored = Number(row!.stored ?? 0)
  const lapsed = Number(row!.lapsed ?? 0)
  return status === 'expired' ? stored + lapsed : stored - lapsed
}
