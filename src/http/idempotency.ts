import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Database, Trx } from '../db/database.js'
import type { Clock } from '../lib/clock.js'
import {
  createIdempotencyStore, type IdempotencyRecord, type IdempotencyStore, type KeyUse, type PendingAnswer,
} from '../modules/idempotency/store.js'
import { errorBody, toAppError } from './error-handler.js'
import { type AppError, errors } from '../lib/errors.js'
import { fingerprintOf } from './fingerprint.js'
import { createRetryMatches } from './retry-matches.js'

export type IdempotencyMode = 'required' | 'optional'

export interface IdempotencyOptions {
  /** Payment operations require a key; other POSTs take one optionally (contract section 5). */
  mode: IdempotencyMode
  /**
   * The whole operation and its idempotency record as one write, tried before the general path's
   * transaction. It answers the record it wrote (`pending.record(status, payload)`), which is then the
   * answer, or undefined having written nothing, and the route's handler runs as usual.
   */
  oneWrite?: (request: FastifyRequest, pending: PendingAnswer) => Promise<IdempotencyRecord | undefined>
  /** Keys are the account's; a scope (ACP: its path) makes a key used here another key than elsewhere. */
  keyScope?: string
  /** The body of a saved refusal (404, 422); default the contract's envelope (ACP routes answer theirs). */
  errorBody?: (error: AppError, requestId: string) => unknown
  /**
   * The body carries secrets (a card's number and CVC): its text is never kept past the request, so a
   * retry is fingerprinted in full (retry-matches.ts keeps the text of retried requests).
   */
  bodyHoldsSecrets?: boolean
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `'required'` or `'optional'` alone, or with a single write (IdempotencyOptions). */
    idempotency?: IdempotencyMode | IdempotencyOptions
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

function optionsOf(option: IdempotencyMode | IdempotencyOptions): IdempotencyOptions {
  return typeof option === 'string' ? { mode: option } : option
}

function answer(reply: FastifyReply, record: IdempotencyRecord) {
  return reply.status(record.response_status).type(JSON_TYPE).send(record.response_body)
}

/** The record's answer again, when the request asks what it answered (`same`); else 422. */
function replay(reply: FastifyReply, record: IdempotencyRecord, same: boolean) {
  if (!same) throw errors.idempotencyKeyReused()
  // Lower case, as Fastify sends it, for the reason in request-context.ts setResponseHeaders.
  return answer(reply.header('idempotent-replayed', 'true'), record)
}

/**
 * Runs the handler in the key's transaction and answers the record of what it ended with: its payload,
 * or a 404/422 outcome, which is saved while the work that led to it is undone.
 */
async function runAndRecord(
  request: FastifyRequest, reply: FastifyReply, trx: Trx, undo: () => Promise<void>, pending: PendingAnswer, run: () => Promise<unknown>,
  bodyOf: (error: AppError, requestId: string) => unknown = errorBody,
) {
  request.ctx.transaction = trx
  try {
    const payload = await run()
    if (payload === reply) throw new Error('an idempotent route must return its payload, not send it')
    return pending.record(reply.statusCode, payload)
  } catch (error) {
    const appError = toAppError(error)
    if (!SAVED_ERROR_STATUSES.has(appError.status)) throw error
    await undo()
    return pending.record(appError.status, bodyOf(appError, request.id))
  } finally {
    request.ctx.transaction = undefined
  }
}

/**
 * Idempotency as a route option (`config: { idempotency: 'required' | 'optional' | IdempotencyOptions }`).
 * The wrapped handler runs inside one transaction that also writes the idempotency record, so the
 * record exists exactly when the work committed: a crash midway leaves neither, and the key can be
 * retried. Handlers of such routes set the status with reply.code() and return their payload.
 */
export function registerIdempotency(app: FastifyInstance, deps: IdempotencyDeps): void {
  const store: IdempotencyStore = createIdempotencyStore({ db: deps.db, ttlSeconds: deps.ttlSeconds })
  const sameRequest = createRetryMatches()

  async function runOnce(request: FastifyRequest, reply: FastifyReply, key: string, options: IdempotencyOptions, run: () => Promise<unknown>) {
    const scoped = options.keyScope === undefined ? key : `${options.keyScope} ${key}`
    const { accountId } = request.ctx
    const now = deps.clock.now()
    // Replays are answered from the stored bytes without opening a transaction; a retry of the same bytes
    // without taking its fingerprint again (retry-matches.ts).
    const saved = await store.find({ accountId, key: scoped, now })
    if (saved) {
      const same = options.bodyHoldsSecrets ? fingerprintOf(request) === saved.fingerprint : sameRequest(request, `${accountId}\n${scoped}`, saved.fingerprint)
      return replay(reply, saved, same)
    }
    const use: KeyUse = { accountId, key: scoped, fingerprint: fingerprintOf(request), now }
    return store.exclusively(use, async () => {
      const pending: PendingAnswer = { record: (status, payload) => store.record(use, status, serializeFor(reply, status, payload)) }
      const written = await options.oneWrite?.(request, pending)
      if (written) return answer(reply, written)
      const outcome = await store.transact(use, (trx, undo) => runAndRecord(request, reply, trx, undo, pending, run, options.errorBody))
      return outcome.replayed ? replay(reply, outcome.record, outcome.record.fingerprint === use.fingerprint) : answer(reply, outcome.record)
    })
  }

  app.addHook('onRoute', (route) => {
    const option = route.config?.idempotency
    if (!option) return
    const options = optionsOf(option)
    const handler = route.handler
    route.handler = async function idempotentHandler(request, reply) {
      const key = keyOf(request, options.mode)
      const run = () => Promise.resolve(handler.call(this, request, reply))
      return key === undefined ? run() : runOnce(request, reply, key, options, run)
    }
  })
}
