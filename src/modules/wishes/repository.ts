import type { ExpressionBuilder, SelectQueryBuilder } from 'kysely'
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
 * Stores `expired` on up to `limit` wishes stored as `status` (active or pending) whose time has
 * passed; returns them as they are now.
 */
export function expireDue(trx: Executor, status: 'active' | 'pending', now: string, limit: number): Promise<WishRow[]> {
  return trx.updateTable('wishes').set({ status: 'expired', updated_at: now })
    // The IN term repeats the partial expiry index's own predicate, which SQLite needs to use it.
    .where('id', 'in', (eb) => eb.selectFrom('wishes').select('id')
      .where('status', 'in', ['active', 'pending']).where('status', '=', status)
      .where('expires_at', '<=', now).limit(limit))
    .where('status', '=', status)
    .returningAll().execute()
}
