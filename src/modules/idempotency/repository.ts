import { sql } from 'kysely'
import type { Executor } from '../../db/database.js'
import { isUniqueViolation } from '../../db/errors.js'
import { rowToJson } from '../../db/dialect.js'
import { tryAdvisoryXactLock } from '../../db/locking.js'
import { batchedLookup } from '../../db/batched-lookup.js'
import { fromTemplate, insertRows } from '../../db/query-template.js'
import type { IdempotencyKeysTable } from '../../db/schema.js'

export type IdempotencyRecord = IdempotencyKeysTable

// Every request with a key the replay cache does not hold runs it.
const liveRecord = batchedLookup<IdempotencyRecord, [string, string, string]>(['account_id', 'idempotency_key', 'now'],
  (db, accountId, key, now) => db.selectFrom('idempotency_keys').selectAll()
    .where('account_id', '=', accountId).where('idempotency_key', '=', key).where('expires_at', '>', now),
  (keys) => sql<IdempotencyRecord & { i: number }>`select q.i, k.* from ${keys}
    cross join lateral (select * from idempotency_keys where idempotency_keys.account_id = q.account_id
      and idempotency_keys.idempotency_key = q.idempotency_key and idempotency_keys.expires_at > q.now limit 1) k`)

/** The live record for (account, key): one whose retention has not run out. */
export async function findLive(db: Executor, accountId: string, key: string, now: string): Promise<IdempotencyRecord | undefined> {
  return (await liveRecord(db, accountId, key, now))[0]
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
    tryAdvisoryXactLock(`${accountId}\n${key}`).as('locked'),
    eb.selectFrom('idempotency_keys').select(rowToJson<IdempotencyRecord>('idempotency_keys').as('record'))
      .where('account_id', '=', accountId).where('idempotency_key', '=', key).where('expires_at', '>', now)
      .as('record'),
  ]).executeTakeFirstOrThrow()
  return { locked: result.locked === true, record: result.record ?? undefined }
}

/**
 * The insert of a new record by a payment's single write. Its conflict rule: a record under the key,
 * live or expired, fails the insert with a unique violation (keyTaken), and the whole write with it;
 * the general path then decides (replays, or overwrites an expired record).
 */
export function insertNew(db: Executor, record: IdempotencyRecord) {
  return insertRows(db, 'idempotency_keys', [record])
}

/**
 * Whether (account, key) has a record, live or expired, which would fail insertNew: compiled once
 * (db/query-template.ts), for the SQLite group commit's piece, which must decide before it writes.
 */
export function keyRecordedStatement(db: Executor, accountId: string, key: string) {
  return fromTemplate<{ recorded: number }>(db, 'key recorded', [accountId, key], ([account, recordKey]) =>
    db.selectFrom('idempotency_keys').select(sql<number>`1`.as('recorded'))
      .where('account_id', '=', account!).where('idempotency_key', '=', recordKey!))
}

/** The failure of insertNew, or of a payment's write statement (payments/repository.ts): the key already has a record. */
export function keyTaken(error: unknown): boolean {
  return isUniqueViolation(error)
}

const WORK = sql.id('idempotent_work')

/** Marks where the protected work starts, inside the transaction that will hold its record. */
export async function markWorkStart(trx: Executor): Promise<void> {
  await sql`savepoint ${WORK}`.execute(trx)
}

/** Undoes the work since markWorkStart, keeping the transaction (and its claim) open for the record. */
export async function undoWork(trx: Executor): Promise<void> {
  await sql`rollback to savepoint ${WORK}`.execute(trx)
}
