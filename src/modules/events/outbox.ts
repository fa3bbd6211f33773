import type { Executor } from '../../db/database.js'
import { newId } from '../../lib/ids.js'
import type { EventType } from './types.js'

export interface EventInput {
  accountId: string
  type: EventType
  /** The object as the API returns it, right after the change. */
  object: { id: string }
  requestId: string | null
  createdAt: string
}

/**
 * Writes an event into the outbox. Always called with the transaction that made the change,
 * so the change and its event commit together or not at all.
 */
export async function recordEvent(trx: Executor, input: EventInput): Promise<string> {
  const id = newId('evt', new Date(input.createdAt))
  await trx.insertInto('events').values({
    id,
    account_id: input.accountId,
    type: input.type,
    object_id: input.object.id,
    data: JSON.stringify({ object: input.object }),
    request_id: input.requestId,
    created_at: input.createdAt,
  }).execute()
  return id
}
