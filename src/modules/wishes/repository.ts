import { type ExpressionBuilder, type SelectQueryBuilder, sql } from 'kysely'
import type { DialectName, Executor } from '../../db/database.js'
import { lockForUpdate } from '../../db/locking.js'
import type { DatabaseSchema, WishesTable } from '../../db/schema.js'
import type { WishStatus } from './transitions.js'

export type WishRow = WishesTable
export type WishChanges = Partial<Omit<WishRow, 'id' | 'account_id' | 'created_at'>>

export async function insertWish(db: Executor, row: WishRow): Promise<void> {
  await db.insertInto('wishes').values(row).execute()
}

export function findWish(db: Executor, accountId: string, id: string): Promise<WishRow | undefined> {
  return db.selectFrom('wishes').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst()
}

/** Reads a wish and locks it for the rest of the transaction, so concurrent updates serialise. */
export function findWishForUpdate(trx: Executor, dialect: DialectName, accountId: string, id: string) {
  const query = trx.selectFrom('wishes').selectAll().where('account_id', '=', accountId).where('id', '=', id)
  return lockForUpdate(query, dialect).executeTakeFirst()
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
    if (status === 'active' || status === 'pending') {
      return eb.and([eb('status', '=', status), eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)])])
    }
    if (status === 'expired') {
      return eb.or([
        eb('status', '=', 'expired'),
        eb.and([eb('status', 'in', ['active', 'pending']), eb('expires_at', '<=', now)]),
      ])
    }
    return eb('status', '=', status)
  }
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

export function listWishes(db: Executor, filter: WishListFilter, page: { limit: number, offset: number }) {
  return filtered(db, filter).selectAll()
    .orderBy('created_at', 'desc').orderBy('id', 'desc')
    .limit(page.limit).offset(page.offset)
    .execute()
}

/**
 * Stores `expired` on up to `limit` open wishes past their time; returns them as they are now, each with
 * the status it had (the counters move from it). The read locks the rows (PostgreSQL), so that status
 * cannot change before the update. Its status term is the partial expiry index's own predicate, in
 * literals: SQLite uses a partial index only when it can see that the query implies the predicate.
 */
export async function expireDue(trx: Executor, dialect: DialectName, now: string, limit: number): Promise<{ row: WishRow, was: WishStatus }[]> {
  const due = await lockForUpdate(trx.selectFrom('wishes').select(['id', 'status'])
    .where(sql<boolean>`status in ('active', 'pending')`).where('expires_at', '<=', now).limit(limit), dialect).execute()
  if (due.length === 0) return []
  const was = new Map(due.map((wish) => [wish.id, wish.status as WishStatus]))
  const rows = await trx.updateTable('wishes').set({ status: 'expired', updated_at: now })
    .where('id', 'in', [...was.keys()]).where('status', 'in', ['active', 'pending'])
    .returningAll().execute()
  return rows.map((row) => ({ row, was: was.get(row.id)! }))
}
