import type { Insertable } from 'kysely'
import { changesOf, countFromCounters, deleteCountedOlderThan, EVENT_COUNTER, foldCounts } from '../../db/counters.js'
import type { Database, Executor } from '../../db/database.js'
import { filteredList, listRows } from '../../db/paging.js'
import type { EventCountChangesTable, EventsTable } from '../../db/schema.js'
import type { Window } from '../../lib/paging.js'
import type { EventType } from './types.js'

export type EventRow = EventsTable

export function findEvent(db: Executor, accountId: string, id: string): Promise<EventRow | undefined> {
  return db.selectFrom('events').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst()
}

export function findEventById(db: Executor, id: string): Promise<EventRow | undefined> {
  return db.selectFrom('events').selectAll().where('id', '=', id).executeTakeFirst()
}

function filtered(db: Executor, accountId: string, type: EventType | undefined) {
  let query = db.selectFrom('events').where('account_id', '=', accountId)
  if (type !== undefined) query = query.where('type', '=', type)
  return query
}

export function listEvents(db: Executor, accountId: string, type: EventType | undefined, window: Window) {
  return listRows(db, filteredList('events', { accountId, type }, (slotted) => filtered(db, slotted.accountId, slotted.type)), window)
}

/** The number of the account's events (of a type), from the counters (db/counters.ts, migration 0013). */
export function countEvents(db: Executor, accountId: string, type: EventType | undefined): Promise<number> {
  return countFromCounters(db, EVENT_COUNTER, accountId, type)
}

/**
 * What events add to their accounts' counts: one change an account and type. Every write of events
 * inserts these beside them, in the same transaction.
 */
export function countsOfEvents(rows: readonly Pick<EventsTable, 'account_id' | 'type'>[], sign: 1 | -1 = 1): Insertable<EventCountChangesTable>[] {
  return changesOf(rows, 'type', sign)
}

/** Moves the events' count changes into event_counts (db/counters.ts); the periodic fold's work. */
export function foldEventCounts(db: Database): Promise<number> {
  return foldCounts(db, EVENT_COUNTER)
}

/**
 * Deletes up to `limit` events created before `before`, and takes them off their accounts' counts in the
 * same transaction; returns how many went.
 */
export function deleteOlderThan(db: Database, before: string, limit: number): Promise<number> {
  return deleteCountedOlderThan(db, EVENT_COUNTER, before, limit)
}

/**
 * The account's events after position `after` and up to `upTo` (both event ids or positions of the same
 * form), in id order: what an event stream sends next (stream.ts).
 */
export function eventsBetween(db: Executor, accountId: string, range: { after: string, upTo: string }, types: readonly EventType[] | undefined, limit: number) {
  let query = db.selectFrom('events').selectAll().where('account_id', '=', accountId)
    .where('id', '>', range.after).where('id', '<=', range.upTo)
  if (types !== undefined) query = query.where('type', 'in', types)
  return query.orderBy('id', 'asc').limit(limit).execute()
}
