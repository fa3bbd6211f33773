import type { Executor } from '../../db/database.js'
import { countRows, filteredList, type ListQuery, listRows } from '../../db/paging.js'
import type { DatabaseSchema, TrustedKeysTable } from '../../db/schema.js'
import type { Window } from '../../lib/paging.js'
import { lockAccountRow } from '../accounts/repository.js'
import type { TrustedKeyRoleValue, TrustedKeyStatus } from './schemas.js'

export type TrustedKeyRow = TrustedKeysTable

export async function insertTrustedKey(db: Executor, row: TrustedKeyRow): Promise<void> {
  await db.insertInto('trusted_keys').values(row).execute()
}

/**
 * Inserts the key unless its account already has `limit` active keys; false when it has. Counted under
 * the account's row lock (accounts/repository.ts lockAccountRow), as webhook endpoints are.
 */
export async function insertTrustedKeyWithinLimit(trx: Executor, row: TrustedKeyRow, limit: number): Promise<boolean> {
  await lockAccountRow(trx, row.account_id)
  const active = await trx.selectFrom('trusted_keys').select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', row.account_id).where('status', '=', 'active').executeTakeFirstOrThrow()
  if (Number(active.n) >= limit) return false
  await insertTrustedKey(trx, row)
  return true
}

export function findTrustedKey(db: Executor, accountId: string, id: string): Promise<TrustedKeyRow | undefined> {
  return db.selectFrom('trusted_keys').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst()
}

/** The account's key with this kid, active or revoked (a kid names one key for good). */
export function findByKid(db: Executor, accountId: string, kid: string): Promise<TrustedKeyRow | undefined> {
  return db.selectFrom('trusted_keys').selectAll().where('account_id', '=', accountId).where('kid', '=', kid).executeTakeFirst()
}

/** Revokes an active key; undefined when it is not active (or not there). */
export function revoke(trx: Executor, accountId: string, id: string, now: string): Promise<TrustedKeyRow | undefined> {
  return trx.updateTable('trusted_keys').set({ status: 'revoked', revoked_at: now })
    .where('account_id', '=', accountId).where('id', '=', id).where('status', '=', 'active')
    .returningAll().executeTakeFirst()
}

export interface TrustedKeyFilter {
  accountId: string
  status?: TrustedKeyStatus | undefined
  role?: TrustedKeyRoleValue | undefined
}

function filtered(db: Executor, filter: TrustedKeyFilter) {
  let query = db.selectFrom('trusted_keys').where('account_id', '=', filter.accountId)
  if (filter.status !== undefined) query = query.where('status', '=', filter.status)
  if (filter.role !== undefined) query = query.where('role', '=', filter.role)
  return query
}

export function listTrustedKeys(db: Executor, filter: TrustedKeyFilter, window: Window) {
  return listRows(db, trustedKeyList(db, filter), window)
}

export function countTrustedKeys(db: Executor, filter: TrustedKeyFilter): Promise<number> {
  return countRows(db, trustedKeyList(db, filter))
}

/** The list's query, compiled once per set of filters (db/paging.ts). */
function trustedKeyList(db: Executor, filter: TrustedKeyFilter): ListQuery<DatabaseSchema, 'trusted_keys'> {
  return filteredList('trusted keys', filter, (slotted) => filtered(db, slotted))
}

/** The account's active keys of one role. */
export function listActiveByRole(db: Executor, accountId: string, role: TrustedKeyRoleValue): Promise<TrustedKeyRow[]> {
  return db.selectFrom('trusted_keys').selectAll().where('account_id', '=', accountId).where('role', '=', role).where('status', '=', 'active').execute()
}
