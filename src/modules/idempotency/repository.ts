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

/**
 * Saves the record. Past its retention a key is new again, so an expired record under the same key is
 * overwritten in the same statement; a live one is left alone and false returned (the caller holds the
 * key, so that means a bug, not a race).
 */
export async function save(trx: Executor, record: IdempotencyRecord, now: string): Promise<boolean> {
  const { account_id: _account, idempotency_key: _key, ...replacement } = record
  const result = await trx.insertInto('idempotency_keys').values(record)
    .onConflict((oc) => oc.columns(['account_id', 'idempotency_key']).doUpdateSet(replacement)
      .where('idempotency_keys.expires_at', '<=', now))
    .executeTakeFirst()
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0
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
