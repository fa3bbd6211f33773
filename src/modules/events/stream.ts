import { setTimeout as sleep } from 'node:timers/promises'
import type { Database } from '../../db/database.js'
import type { Clock } from '../../lib/clock.js'
import { errors } from '../../lib/errors.js'
import { idTimePart } from '../../lib/ids.js'
import type { RequestContext } from '../../lib/request-context.js'
import * as repo from './repository.js'
import type { Event } from './schemas.js'
import { toEvent } from './service.js'
import { EVENT_TYPES, type EventType } from './types.js'

/**
 * GET /events/stream (decided in docs/decisions.md, "Event stream"): each stream polls the events table
 * by id, so an event written by any process sharing the database reaches every stream, and a stream
 * holds no database connection between polls.
 *
 * Event ids are ULIDs whose time is the event's `created_at`, but concurrent transactions can commit
 * out of id order: a position may only move past ids that nothing still uncommitted can take. A stream
 * therefore sends an event once its id time is `settleMs` old (EVENT_STREAM_SETTLE_MS); a transaction that commits its event
 * later than that (only under lock waits of seconds) is missed by streams, never by GET /events or
 * webhooks. In exchange a position is one id: resuming from the last id received repeats nothing and
 * skips nothing, and replay and live are the same loop.
 */
/** Open streams per account in one server process; one more is a 400 resource_limit_exceeded. */
export const MAX_STREAMS_PER_ACCOUNT = 5
/** Events per poll; a stream behind by more reads again at once. */
const BATCH = 100

/** An event id, or a position between ids (the form the stream's first message carries). */
const POSITION = /^evt_[0-9a-hjkmnp-tv-z]{26}$/

/** The greatest id of any event whose id time is `ms`: every event of that millisecond sorts at or before it. */
function positionAt(ms: number): string {
  return `evt_${idTimePart(ms)}${'z'.repeat(16)}`
}

export interface StreamRequest {
  /** The Last-Event-ID header, which wins over `startingAfter` (a browser sends it on reconnection). */
  lastEventId?: string | undefined
  startingAfter?: string | undefined
  /** Comma-separated event types; all when absent. */
  types?: string | undefined
}

export interface OpenStream {
  /** The position the stream starts after: the first message's id. */
  readonly start: string
  /** Events in order, in batches, until closed; each batch is non-empty. */
  batches(): AsyncGenerator<Event[]>
  /** Ends batches() (at once, even mid-wait) and frees the stream's slot; safe to call twice. */
  close(): void
}

function parsePosition(param: string, value: string): string {
  if (!POSITION.test(value)) throw errors.parameterInvalid(param, `${param} must be an event id (evt_ followed by 26 characters), the id of the last event received`)
  return value
}

function parseTypes(value: string | undefined): EventType[] | undefined {
  if (value === undefined) return undefined
  const types = value.split(',').map((type) => type.trim())
  for (const type of types) {
    if (!(EVENT_TYPES as readonly string[]).includes(type)) {
      throw errors.parameterInvalid('types', `types must be event types separated by commas; "${type.slice(0, 60)}" is not one of ${EVENT_TYPES.join(', ')}`)
    }
  }
  return [...new Set(types)] as EventType[]
}

export function createEventStreams(deps: { db: Database, clock: Clock, settleMs: number, pollMs: number }) {
  const { db, clock, settleMs, pollMs } = deps
  const openByAccount = new Map<string, number>()
  const closers = new Set<() => void>()
  const settled = () => positionAt(clock.now().getTime() - settleMs)

  return {
    /**
     * Validates the request and takes a slot; every refusal is thrown here, before the answer starts.
     * The first poll happens here too, so an unreachable database is a 503, not a broken stream.
     */
    async open(ctx: RequestContext, request: StreamRequest): Promise<OpenStream> {
      const resumeFrom = request.lastEventId ?? request.startingAfter
      const after = resumeFrom === undefined ? undefined
        : parsePosition(request.lastEventId !== undefined ? 'Last-Event-ID' : 'starting_after', resumeFrom)
      const types = parseTypes(request.types)
      const open = openByAccount.get(ctx.accountId) ?? 0
      if (open >= MAX_STREAMS_PER_ACCOUNT) {
        throw errors.resourceLimitExceeded(`An account may have at most ${MAX_STREAMS_PER_ACCOUNT} event streams open on one server; close one before opening another`)
      }
      // Without a position, the events created from now on.
      const start = after ?? positionAt(clock.now().getTime())
      const first = await repo.eventsBetween(db.kysely, ctx.accountId, { after: start, upTo: settled() }, types, BATCH)

      openByAccount.set(ctx.accountId, open + 1)
      const stop = new AbortController()
      const close = () => {
        if (stop.signal.aborted) return
        stop.abort()
        closers.delete(close)
        const left = (openByAccount.get(ctx.accountId) ?? 1) - 1
        if (left > 0) openByAccount.set(ctx.accountId, left)
        else openByAccount.delete(ctx.accountId)
      }
      closers.add(close)

      async function* batches(): AsyncGenerator<Event[]> {
        let position = start
        let rows = first
        while (!stop.signal.aborted) {
          if (rows.length > 0) {
            position = rows.at(-1)!.id
            yield rows.map(toEvent)
          }
          if (rows.length < BATCH) {
            try {
              await sleep(pollMs, undefined, { signal: stop.signal })
            } catch {
              return
            }
          }
          rows = await repo.eventsBetween(db.kysely, ctx.accountId, { after: position, upTo: settled() }, types, BATCH)
        }
      }
      return { start, batches, close }
    },

    /** Ends every open stream: the server is closing. */
    closeAll(): void {
      for (const close of [...closers]) close()
    },
  }
}

export type EventStreams = ReturnType<typeof createEventStreams>
