import { sql } from 'kysely'
import type { DialectName, Executor } from '../../db/database.js'
import type { IdempotencyKeysTable } from '../../db/schema.js'

export type IdempotencyRecord = IdempotencyKeysTable

/** The live record for (account, key): one whose retention has not run out. */
export function findLive(db: Executor, accountId: string, key: string, now: string): Promise<IdempotencyRecord | undefined> {
  return db.selectFrom('idempotency_keys').selectAll()
    .where('account_id', '=', accountId).where('idempotency_key', '=', key).where('expires_at', '>', now)
    .executeTakeFirst()
}

export async function insert(trx: Executor, record: IdempotencyRecord): Promise<void> {
  await trx.insertInto('idempotency_keys').values(record).execute()
}

/** Past its retention a key is new again: its old record goes before the new one is written. */
export async function deleteExpired(trx: Executor, accountId: string, key: string, now: string): Promise<void> {
  await trx.deleteFrom('idempotency_keys')
    .where('account_id', '=', accountId).where('idempotency_key', '=', key).where('expires_at', '<=', now)
    .execute()
}

/** Deletes every record past its retention; returns how many went. */
export async function purgeExpired(db: Executor, now: string): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst()
  return Number(result.numDeletedRows)
}

/**
 * Claims (account, key) for this transaction without waiting. On PostgreSQL an advisory lock held
 * until commit, so two processes never work on one key at once; false means another transaction
 * has it. SQLite serves one process whose transactions already run one at a time.
 */
export async function tryLockKey(trx: Executor, dialect: DialectName, accountId: string, key: string): Promise<boolean> {
  if (dialect !== 'postgres') return true
  const result = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(hashtextextended(${`${accountId}\n${key}`}, 0)) as locked`.execute(trx)
  return result.rows[0]?.locked === true
}
