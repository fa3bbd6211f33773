import { type Insertable, sql } from 'kysely'
import { batchedLookup } from '../../db/batched-lookup.js'
import { ATTEMPT_COUNTER, changesOf, countFromCounters, deleteCountedOlderThan, foldCounts, recordChanges } from '../../db/counters.js'
import type { Database, Executor, Trx } from '../../db/database.js'
import { lockAccountRow } from '../accounts/repository.js'
import { countRows, filteredList, type ListQuery, listRows } from '../../db/paging.js'
import type { AttemptCountChangesTable, DatabaseSchema, WebhookAttemptsTable, WebhookEndpointsTable } from '../../db/schema.js'
import type { Window } from '../../lib/paging.js'

export type EndpointRow = WebhookEndpointsTable
export type AttemptRow = WebhookAttemptsTable

export async function insertEndpoint(db: Executor, row: EndpointRow): Promise<void> {
  await db.insertInto('webhook_endpoints').values(row).execute()
}

/**
 * Inserts the endpoint unless its account already has `limit` endpoints; false when it has. Counted
 * under the account's row lock (accounts/repository.ts lockAccountRow), so concurrent creates never
 * both count below the limit.
 */
export async function insertEndpointWithinLimit(trx: Trx, row: EndpointRow, limit: number): Promise<boolean> {
  await lockAccountRow(trx, row.account_id)
  if ((await countEndpoints(trx, row.account_id)) >= limit) return false
  await insertEndpoint(trx, row)
  return true
}

export function findEndpoint(db: Executor, accountId: string, id: string): Promise<EndpointRow | undefined> {
  return db.selectFrom('webhook_endpoints').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst()
}

export function findEndpointById(db: Executor, id: string): Promise<EndpointRow | undefined> {
  return db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst()
}

/** The enabled endpoints of an account, for fanning an event out. */
type EnabledEndpoint = Pick<EndpointRow, 'id' | 'events'>
const enabledEndpointsOf = batchedLookup<EnabledEndpoint, [string]>(['account_id'],
  (db, accountId) => db.selectFrom('webhook_endpoints').select(['id', 'events']).where('account_id', '=', accountId).where('status', '=', 'enabled'),
  // offset 0 keeps the subquery a subquery: one index lookup per key.
  (keys) => sql<EnabledEndpoint & { i: number }>`select q.i, e.id, e.events from ${keys}
    cross join lateral (select id, events from webhook_endpoints where webhook_endpoints.account_id = q.account_id and webhook_endpoints.status = 'enabled' offset 0) e`)

export function enabledEndpoints(db: Executor, accountId: string): Promise<EnabledEndpoint[]> {
  return enabledEndpointsOf(db, accountId)
}

export async function updateEndpoint(db: Executor, accountId: string, id: string, changes: Partial<EndpointRow>): Promise<void> {
  await db.updateTable('webhook_endpoints').set(changes).where('account_id', '=', accountId).where('id', '=', id).execute()
}

export async function disableEndpoint(db: Executor, id: string, reason: string, now: string): Promise<void> {
  await db.updateTable('webhook_endpoints').set({ status: 'disabled', disabled_reason: reason, updated_at: now })
    .where('id', '=', id).where('status', '=', 'enabled').execute()
}

export async function deleteEndpoint(db: Executor, accountId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('webhook_endpoints').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export function listEndpoints(db: Executor, accountId: string, window: Window) {
  return listRows(db, endpointList(db, accountId), window)
}

export function countEndpoints(db: Executor, accountId: string): Promise<number> {
  return countRows(db, endpointList(db, accountId))
}

/** The list's query, compiled once (db/paging.ts). */
function endpointList(db: Executor, accountId: string): ListQuery<DatabaseSchema, 'webhook_endpoints'> {
  return filteredList('webhook endpoints', { accountId }, (slotted) => db.selectFrom('webhook_endpoints').where('account_id', '=', slotted.accountId))
}

/** Records an attempt and its count change (db/counters.ts): call it in the transaction that commits it. */
export async function insertAttempt(trx: Trx, row: AttemptRow): Promise<void> {
  await trx.insertInto('webhook_attempts').values(row).execute()
  await trx.executeQuery(recordChanges(trx, ATTEMPT_COUNTER, countsOfAttempts([row])))
}

/** The count changes of attempts recorded (sign 1) or deleted (-1): one an account and endpoint. */
export function countsOfAttempts(rows: readonly Pick<AttemptRow, 'account_id' | 'endpoint_id'>[], sign: 1 | -1 = 1): Insertable<AttemptCountChangesTable>[] {
  return changesOf(rows, 'endpoint_id', sign)
}

export function findAttempt(db: Executor, accountId: string, id: string): Promise<AttemptRow | undefined> {
  return db.selectFrom('webhook_attempts').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst()
}

export async function countAttempts(db: Executor, endpointId: string, eventId: string): Promise<number> {
  const row = await db.selectFrom('webhook_attempts').select((eb) => eb.fn.countAll<number>().as('n'))
    .where('endpoint_id', '=', endpointId).where('event_id', '=', eventId).executeTakeFirstOrThrow()
  return Number(row.n)
}

export function listAttempts(db: Executor, endpointId: string, window: Window) {
  return listRows(db, filteredList('webhook attempts', { endpointId }, (slotted) => db.selectFrom('webhook_attempts').where('endpoint_id', '=', slotted.endpointId)), window)
}

/** A delivery attempt to this endpoint (a delivery list's cursor). */
export function findAttemptOfEndpoint(db: Executor, endpointId: string, id: string): Promise<AttemptRow | undefined> {
  return db.selectFrom('webhook_attempts').selectAll().where('endpoint_id', '=', endpointId).where('id', '=', id).executeTakeFirst()
}

/** The endpoint's attempts (`meta.total` of its delivery list), from counters: a few rows however many. */
export function countAttemptsOfEndpoint(db: Executor, accountId: string, endpointId: string): Promise<number> {
  return countFromCounters(db, ATTEMPT_COUNTER, accountId, endpointId)
}

/** Moves the attempts' count changes into attempt_counts (db/counters.ts); the periodic fold's work. */
export function foldAttemptCounts(db: Database): Promise<number> {
  return foldCounts(db, ATTEMPT_COUNTER)
}

/**
 * Deletes up to `limit` attempts created before `before`, and takes them off their endpoints' counts in
 * the same transaction; returns how many went.
 */
export function deleteAttemptsOlderThan(db: Database, before: string, limit: number): Promise<number> {
  return deleteCountedOlderThan(db, ATTEMPT_COUNTER, before, limit)
}
