import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { Database } from '../../db/database.js'
import { errorResponses } from '../../http/schemas.js'
import type { Lifecycle } from '../../http/draining.js'
import { errors } from '../../lib/errors.js'

const Status = Type.Object({ status: Type.Literal('ok') }, { description: 'OK', examples: [{ status: 'ok' }] })

/** Open routes for load balancers and orchestrators: no authentication. */
export const healthRoutes: FastifyPluginAsyncTypebox<{ db: Pick<Database, 'ping'>, lifecycle: Lifecycle }> = async (app, { db, lifecycle }) => {
  app.get('/healthz', {
    schema: {
      operationId: 'getHealth',
      summary: 'Liveness',
      description: '200 while the process runs.',
      tags: ['System'],
      security: [],
      response: { 200: Status },
    },
  }, async () => ({ status: 'ok' as const }))

  app.get('/readyz', {
    schema: {
      operationId: 'getReadiness',
      summary: 'Readiness',
      description: '200 when the database answers and the process is not shutting down, else 503 `service_unavailable`.',
      tags: ['System'],
      security: [],
      response: { 200: Status, ...errorResponses() },
    },
  }, async (request) => {
    if (lifecycle.draining) throw errors.serviceUnavailable()
    try {
      await db.ping()
    } catch (error) {
      request.log.warn({ err: error }, 'readiness check: database did not answer')
      throw errors.serviceUnavailable()
    }
    return { status: 'ok' as const }
  })
}
