import { sql } from 'kysely'
import type { Executor } from '../../db/database.js'
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
 * Claims (account, key) for this transaction without waiting, and reads its live record, in one round
 * trip (PostgreSQL only; SQLite serves one process, whose in-flight set already excludes a race). The
 * claim is an advisory lock held until commit, so two processes never work on one key at once; locked
 * false means another transaction has it. A record finished by another process just before the claim
 * may be missed by the read, which shares the statement's snapshot; the save then finds it and refuses.
 */
export async function claimKey(trx: Executor, accountId: string, key: string, now: string): Promise<{ locked: boolean, record: IdempotencyRecord | undefined }> {
  const result = await trx.selectNoFrom((eb) => [
    sql<boolean>`pg_try_advisory_xact_lock(hashtextextended(${`${accountId}\n${key}`}, 0))`.as('locked'),
    eb.selectFrom('idempotency_keys').select((r) => sql<IdempotencyRecord>`row_to_json(${r.table('idempotency_keys')})`.as('record'))
      .where('account_id', '=', accountId).where('idempotency_key', '=', key).where('expires_at', '>', now)
      .as('record'),
  ]).executeTakeFirstOrThrow()
  return { locked: result.locked === true, record: result.record ?? undefined }
}
