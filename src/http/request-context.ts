import type { FastifyInstance } from 'fastify'
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
 * Request-Id and API-Version on every response (errors and 404s included), and one structured
 * log line per request. The line carries ids and timings only, never headers or bodies.
 */
export function registerRequestContext(app: FastifyInstance): void {
  app.decorateRequest('principal', null)
  app.decorateRequest('ctx', null as unknown as RequestContext)

  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('Request-Id', request.id)
    reply.header('API-Version', API_VERSION)
    done(null, payload)
  })

  app.addHook('onResponse', (request, reply, done) => {
    request.log.info({
      account_id: request.principal?.accountId,
      method: request.method,
      route: request.routeOptions.url ?? 'not_found',
      status: reply.statusCode,
      duration_ms: Math.round(reply.elapsedTime * 100) / 100,
    }, 'request')
    done()
  })
}
