import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import type { RequestContext } from '../lib/request-context.js'
import type { Principal } from '../modules/accounts/service.js'
import { API_VERSION } from './version.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by authentication on API routes; null on open routes. */
    principal: Principal | null
    ctx: RequestContext
  }
}

/** The name of the request id in every line a request logs (Fastify's `requestIdLogLabel`, app.ts). */
export const REQUEST_ID_LOG_LABEL = 'request_id'

/**
 * The logger request lines are written with: a child of the server's pino logger without redaction, one
 * per logger. A request line holds ids, the method, the route pattern, the status and a duration, all
 * primitives under names no redacted path matches, so redaction cannot change a byte of it, and pino's
 * redaction walks every redacted path for every value of every line (about 5 µs a request). Every other
 * line, errors included, is written through the request's own, redacting logger.
 */
const requestLineLoggers = new WeakMap<FastifyBaseLogger, FastifyBaseLogger>()

function requestLineLogger(log: FastifyBaseLogger): FastifyBaseLogger | undefined {
  // Only a pino logger (the server's, tests' own) has levels to ask; Fastify's null logger writes nothing.
  if (typeof (log as Partial<Logger>).isLevelEnabled !== 'function') return undefined
  let plain = requestLineLoggers.get(log)
  if (plain === undefined) requestLineLoggers.set(log, plain = log.child({}, { redact: [] }))
  return plain
}

/**
 * Request-Id, API-Version, X-Content-Type-Options and Cache-Control on every response (errors and
 * 404s included), and one structured log line per request. The line carries ids and timings only,
 * never headers or bodies.
 */
export function registerRequestContext(app: FastifyInstance): void {
  app.decorateRequest('principal', null)
  app.decorateRequest('ctx', null as unknown as RequestContext)

  app.addHook('onSend', (request, reply, payload, done) => {
    setResponseHeaders(request, reply)
    done(null, payload)
  })

  app.addHook('onResponse', (request, reply, done) => {
    logRequest(request, reply)
    done()
  })
}

/**
 * The headers of every answer. `Cache-Control: no-store` unless the route chose its own caching:
 * API answers (errors included) hold account data that no cache on the way may keep.
 * Framework errors (http/client-errors.ts) run no hooks and call this themselves.
 */
export function setResponseHeaders(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('Request-Id', request.id)
  reply.header('API-Version', API_VERSION)
  reply.header('X-Content-Type-Options', 'nosniff')
  if (!reply.hasHeader('Cache-Control')) reply.header('Cache-Control', 'no-store')
}

/** The one log line of a request: ids and timings only, never headers or bodies. */
export function logRequest(request: FastifyRequest, reply: FastifyReply, route?: string): void {
  const principal = request.principal
  const line = {
    account_id: principal?.accountId,
    // The agent whose key (ak_) made the request; absent for account keys.
    agent_id: principal?.agentId || undefined,
    method: request.method,
    route: route ?? request.routeOptions.url ?? 'not_found',
    status: reply.statusCode,
    duration_ms: Math.round(reply.elapsedTime * 100) / 100,
  }
  const plain = requestLineLogger(request.server.log)
  // The request's logger decides whether the line is written (its route may log less); the plain one writes
  // it, with the request id where the request's logger's binding would have put it.
  if (plain === undefined) request.log.info(line, 'request')
  else if ((request.log as Logger).isLevelEnabled('info')) plain.info({ [REQUEST_ID_LOG_LABEL]: request.id, ...line }, 'request')
}
