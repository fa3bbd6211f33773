import type { Database } from '../../db/database.js'
import { errors } from '../../lib/errors.js'
import { listPage } from '../../lib/paging.js'
import type { RequestContext } from '../../lib/request-context.js'
import * as repo from './repository.js'
import type { Event, ListEventsInput } from './schemas.js'

/** The API form of a stored event; also the body of its webhook deliveries. */
export function toEvent(row: repo.EventRow): Event {
  return {
    id: row.id,
    type: row.type as Event['type'],
    created_at: row.created_at,
    data: JSON.parse(row.data) as Event['data'],
    request_id: row.request_id,
  }
}

export function createEventService(deps: { db: Database }) {
  const { db } = deps
  return {
    async get(ctx: RequestContext, id: string): Promise<Event> {
      const row = await repo.findEvent(db.kysely, ctx.accountId, id)
      if (!row) throw errors.resourceMissing('event', id)
      return toEvent(row)
    },
    async list(ctx: RequestContext, input: ListEventsInput) {
      return listPage(input, {
        resource: 'event',
        find: (id) => repo.findEvent(db.kysely, ctx.accountId, id),
        rows: (window) => repo.listEvents(db.kysely, ctx.accountId, input.type, window),
        total: () => repo.countEvents(db.kysely, ctx.accountId, input.type),
        map: toEvent,
      })
    },
  }
}

export type EventService = ReturnType<typeof createEventService>
