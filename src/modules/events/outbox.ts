import type { Executor } from '../../db/database.js'
import { compiled, insertRows, type Statement } from '../../db/query-template.js'
import { EVENT_COUNTER, recordChanges } from '../../db/counters.js'
import type { EventsTable } from '../../db/schema.js'
import { inBatches, type JobRow, jobRow } from '../queue/repository.js'
import { newId } from '../../lib/ids.js'
import { type EndpointRow, enabledEndpoints } from '../webhooks/repository.js'
import { countsOfEvents } from './repository.js'
import type { EventType } from './types.js'

/** The job that delivers one event to one webhook endpoint. */
export const DELIVER_JOB = 'webhook.deliver'
export interface DeliverPayload { endpoint_id: string, event_id: string }

export interface EventInput {
  accountId: string
  type: EventType
  /** The object as the API returns it, right after the change. */
  object: { id: string }
  requestId: string | null
  createdAt: string
}

/**
 * The account's enabled endpoints, read once per transaction: a payment writes two or three events in
 * one, and no endpoint can change inside it.
 */
const endpointsByTransaction = new WeakMap<Executor, Map<string, ReturnType<typeof enabledEndpoints>>>()
function endpointsFor(trx: Executor, accountId: string): ReturnType<typeof enabledEndpoints> {
  if (!trx.isTransaction) return enabledEndpoints(trx, accountId)
  let byAccount = endpointsByTransaction.get(trx)
  if (!byAccount) endpointsByTransaction.set(trx, byAccount = new Map())
  let endpoints = byAccount.get(accountId)
  if (!endpoints) byAccount.set(accountId, endpoints = enabledEndpoints(trx, accountId))
  return endpoints
}

function subscribes(events: string, type: EventType): boolean {
  const types = JSON.parse(events) as string[]
  return types.includes('*') || types.includes(type)
}

/** The outbox rows of events; their ids keep the order given. */
export function eventRows(inputs: EventInput[]): EventsTable[] {
  // A change's events mostly carry one object at one time (payment.created and payment.succeeded): its JSON
  // and its date are made once, not once an event (docs/performance.md, twenty-seventh pass).
  let object: EventInput['object'] | undefined
  let data = ''
  let createdAt: string | undefined
  let at = new Date(Number.NaN)
  return inputs.map((input) => {
    if (input.object !== object) data = JSON.stringify({ object: object = input.object })
    if (input.createdAt !== createdAt) at = new Date(createdAt = input.createdAt)
    return {
      id: newId('evt', at),
      account_id: input.accountId,
      type: input.type,
      object_id: input.object.id,
      data,
      request_id: input.requestId,
      created_at: input.createdAt,
    }
  })
}

/** A delivery job for every endpoint that wants each event. */
export function deliveryJobs(events: EventsTable[], endpoints: Pick<EndpointRow, 'id' | 'events'>[]): JobRow[] {
  const jobs: JobRow[] = []
  if (endpoints.length === 0) return jobs
  for (const event of events) {
    const at = new Date(event.created_at)
    for (const endpoint of endpoints) {
      if (!subscribes(endpoint.events, event.type as EventType)) continue
      const payload: DeliverPayload = { endpoint_id: endpoint.id, event_id: event.id }
      jobs.push(jobRow({ type: DELIVER_JOB, payload: { ...payload }, runAt: at }, at))
    }
  }
  return jobs
}

/**
 * Writes events into the outbox and a delivery job for every enabled endpoint that wants each. Always
 * called with the transaction that made the change, so the change, its events and their deliveries
 * commit together or not at all: a crash can delay a webhook but never lose one. Several events of one
 * change are written in one statement, and so are their deliveries.
 */
export async function recordEvents(trx: Executor, inputs: EventInput[]): Promise<string[]> {
  const rows = eventRows(inputs)
  const endpoints = new Map<string, Awaited<ReturnType<typeof enabledEndpoints>>>()
  for (const accountId of new Set(rows.map((row) => row.account_id))) endpoints.set(accountId, await endpointsFor(trx, accountId))
  for (const statement of outboxStatements(trx, rows, (accountId) => endpoints.get(accountId)!)) await trx.executeQuery(statement)
  return rows.map((row) => row.id)
}

/**
 * The statements that write events into the outbox with their deliveries (recordEvents), given each
 * account's enabled endpoints: for a caller that runs them itself (a new wish, in a statement batch).
 */
export function outboxStatements(db: Executor, rows: EventsTable[], endpointsOf: (accountId: string) => Pick<EndpointRow, 'id' | 'events'>[]): Statement[] {
  const jobs = rows.flatMap((row) => deliveryJobs([row], endpointsOf(row.account_id)))
  return [
    ...(rows.length > 0 ? [insertRows(db, 'events', rows), recordChanges(db, EVENT_COUNTER, countsOfEvents(rows))] : []),
    ...inBatches(jobs).map((batch) => insertRows(db, 'jobs', batch)),
  ].map(compiled)
}

/** One event: see recordEvents. */
export async function recordEvent(trx: Executor, input: EventInput): Promise<string> {
  const [id] = await recordEvents(trx, [input])
  return id!
}
