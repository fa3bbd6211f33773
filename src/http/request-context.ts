import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
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
  request.log.info({
    account_id: request.principal?.accountId,
    // The agent whose key (ak_) made the request; absent for account keys.
    ...(request.principal?.agentId ? { agent_id: request.principal.agentId } : {}),
    method: request.method,
    route: route ?? request.routeOptions.url ?? 'not_found',
    status: reply.statusCode,
    duration_ms: Math.round(reply.elapsedTime * 100) / 100,
  }, 'request')
}
