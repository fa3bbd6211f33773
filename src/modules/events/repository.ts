import type { Executor } from '../../db/database.js'
import { inWindow } from '../../db/paging.js'
import type { EventsTable } from '../../db/schema.js'
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
  return inWindow(filtered(db, accountId, type).selectAll(), window).execute()
}

export async function countEvents(db: Executor, accountId: string, type: EventType | undefined): Promise<number> {
  const row = await filtered(db, accountId, type).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  return Number(row.n)
}

/** Deletes up to `limit` events created before `before`; returns how many went. */
export async function deleteOlderThan(db: Executor, before: string, limit: number): Promise<number> {
  const result = await db.deleteFrom('events')
    .where('id', 'in', (eb) => eb.selectFrom('events').select('id').where('created_at', '<', before).limit(limit))
    .executeTakeFirst()
  return Number(result.numDeletedRows)
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
