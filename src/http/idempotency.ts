import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { sql } from 'kysely'
import { LRUCache } from 'lru-cache'
import type { Database } from '../db/database.js'
import { type Clock, toTimestamp } from '../lib/clock.js'
import * as records from '../modules/idempotency/repository.js'
import { errorBody, toAppError } from './error-handler.js'
import { errors } from '../lib/errors.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Payment operations require a key; other POSTs take one optionally (contract section 5). */
    idempotency?: 'required' | 'optional'
    /**
     * The whole operation and its idempotency record as one write, tried before the general path's
     * transaction. It returns the record it wrote, which is then the answer, or undefined having
     * written nothing, and the route's handler runs as usual.
     */
    singleWrite?: (request: FastifyRequest, recordOf: (status: number, payload: unknown) => records.IdempotencyRecord) => Promise<records.IdempotencyRecord | undefined>
  }
}

export interface IdempotencyDeps {
  db: Database
  clock: Clock
  ttlSeconds: number
}

const HEADER_KEY = /^[\x20-\x7E]{1,255}$/
/** Outcomes worth replaying; 400, 401, 403, 409, 429 and 5xx are not saved and may be retried. */
const SAVED_ERROR_STATUSES = new Set([404, 422])
const JSON_TYPE = 'application/json; charset=utf-8'
/** Bounds the memory of the replay cache below. */
const RECENT_RECORDS_BYTES = 4_000_000
const RECENT_RECORDS_TTL_MS = 60_000

/** JSON with object keys sorted, so that member order never changes a fingerprint. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

/**
 * A payload as the route's response schema for `status` serializes it, so that what is saved, sent
 * and replayed holds exactly the members the schema declares, as the same object read by a GET.
 * Every idempotent route declares its success status (a missing schema is a programming error and
 * fails the request before anything commits); an error status without one falls back to plain JSON,
 * as Fastify's own serialization does.
 */
function serializeFor(reply: FastifyReply, status: number, payload: unknown): string {
  const input = payload as Record<string, unknown>
  if (status < 400) return reply.serializeInput(input, String(status)) as string
  const serialize = reply.getSerializationFunction(String(status))
  return serialize ? serialize(input) : JSON.stringify(payload)
}

/** Method, path and the validated body (defaults applied), without the key itself. */
function fingerprintOf(request: FastifyRequest): string {
  const { idempotency_key: _ignored, ...body } = (request.body ?? {}) as Record<string, unknown>
  const path = request.url.split('?')[0]
  return createHash('sha256').update(`${request.method} ${path}\n${canonicalJson(body)}`).digest('hex')
}

/** The key from the body or the Idempotency-Key header; when both are sent they must agree. */
function keyOf(request: FastifyRequest, mode: 'required' | 'optional'): string | undefined {
  const header = request.headers['idempotency-key']
  const headerKey = Array.isArray(header) ? header.join(',') : header
  if (headerKey !== undefined && !HEADER_KEY.test(headerKey)) {
    throw errors.parameterInvalid('idempotency_key', 'The Idempotency-Key header must be 1..255 printable ASCII characters')
  }
  // The body member is checked by the route's schema.
  const bodyKey = (request.body as { idempotency_key?: string } | undefined)?.idempotency_key
  if (headerKey !== undefined && bodyKey !== undefined && headerKey !== bodyKey) throw errors.idempotencyKeyMismatch()
  const key = bodyKey ?? headerKey
  if (key === undefined && mode === 'required') throw errors.idempotencyKeyMissing()
  return key
}

/**
 * Idempotency as a route option (`config: { idempotency: 'required' | 'optional' }`). The wrapped
 * handler runs inside one transaction that also writes the idempotency record, so the record exists
 * exactly when the work committed: a crash midway leaves neither, and the key can be retried.
 * Handlers of such routes set the status with reply.code() and return their payload.
 */
export function registerIdempotency(app: FastifyInstance, deps: IdempotencyDeps): void {
  const { db, clock, ttlSeconds } = deps
  // Keys being worked on in this process: a second request answers 409 at once instead of queueing.
  const inFlight = new Set<string>()
  // Records this process saved or read lately. A live record is never changed or removed before it
  // expires, by any process, so a copy answers a retry exactly as the database would until then. The
  // copy is also dropped after a minute, which bounds what a record edited by hand, or overwritten by a
  // server whose clock runs ahead, could be answered from.
  const recent = new LRUCache<string, records.IdempotencyRecord>({
    ttl: RECENT_RECORDS_TTL_MS,
    maxSize: RECENT_RECORDS_BYTES,
    sizeCalculation: (record) => record.response_body.length + record.idempotency_key.length + 200,
  })

  function replay(reply: FastifyReply, record: records.IdempotencyRecord, fingerprint: string) {
    if (record.fingerprint !== fingerprint) throw errors.idempotencyKeyReused()
    return reply.status(record.response_status).header('Idempotent-Replayed', 'true').type(JSON_TYPE).send(record.response_body)
  }

  async function runOnce(request: FastifyRequest, reply: FastifyReply, key: string, run: () => Promise<unknown>) {
    const { accountId } = request.ctx
    const fingerprint = fingerprintOf(request)
    const now = clock.now()
    const nowIso = toTimestamp(now)
    const recordOf = (status: number, body: string): records.IdempotencyRecord => ({
      account_id: accountId,
      idempotency_key: key,
      fingerprint,
      response_status: status,
      response_body: body,
      created_at: nowIso,
      expires_at: toTimestamp(new Date(now.getTime() + ttlSeconds * 1000)),
    })
    const slot = `${accountId}\n${key}`
    // Replays are answered from the stored bytes without opening a transaction.
    const cached = recent.get(slot)
    const saved = cached !== undefined && cached.expires_at > nowIso ? cached : await records.findLive(db.kysely, accountId, key, nowIso)
    if (saved) {
      recent.set(slot, saved)
      return replay(reply, saved, fingerprint)
    }

    if (inFlight.has(slot)) throw errors.idempotencyKeyInUse()
    inFlight.add(slot)
    try {
      const singleWrite = request.routeOptions.config.singleWrite
      const written = singleWrite && await singleWrite(request, (status, payload) => recordOf(status, serializeFor(reply, status, payload)))
      if (written) {
        recent.set(slot, written)
        return reply.status(written.response_status).type(JSON_TYPE).send(written.response_body)
      }

      const outcome = await db.kysely.transaction().execute(async (trx) => {
        if (db.dialect === 'postgres') {
          // Another process may be working on this key, or have finished it since the read above.
          // (SQLite serves one process, whose in-flight set already rules both out.)
          const claim = await records.claimKey(trx, accountId, key, nowIso)
          if (!claim.locked) throw errors.idempotencyKeyInUse()
          if (claim.record) return { kind: 'replay' as const, record: claim.record }
        }

        await sql`savepoint idempotent_work`.execute(trx)
        let status: number
        let body: string
        request.ctx.transaction = trx
        try {
          const payload = await run()
          if (payload === reply) throw new Error('an idempotent route must return its payload, not send it')
          status = reply.statusCode
          body = serializeFor(reply, status, payload)
        } catch (error) {
          const appError = toAppError(error)
          if (!SAVED_ERROR_STATUSES.has(appError.status)) throw error
          // The outcome is saved, the work that led to it is not.
          await sql`rollback to savepoint idempotent_work`.execute(trx)
          status = appError.status
          body = serializeFor(reply, status, errorBody(appError, request.id))
        } finally {
          request.ctx.transaction = undefined
        }
        const record = recordOf(status, body)
        if (!await records.save(trx, record, nowIso)) throw errors.idempotencyKeyInUse()
        return { kind: 'fresh' as const, record }
      })
      // Kept once committed: a record whose transaction rolled back must not answer anything.
      recent.set(slot, outcome.record)
      if (outcome.kind === 'replay') return replay(reply, outcome.record, fingerprint)
      return reply.status(outcome.record.response_status).type(JSON_TYPE).send(outcome.record.response_body)
    } finally {
      inFlight.delete(slot)
    }
  }

  app.addHook('onRoute', (route) => {
    const mode = route.config?.idempotency
    if (!mode) return
    const handler = route.handler
    route.handler = async function idempotentHandler(request, reply) {
      const key = keyOf(request, mode)
      const run = () => Promise.resolve(handler.call(this, request, reply))
      return key === undefined ? run() : runOnce(request, reply, key, run)
    }
  })
}
