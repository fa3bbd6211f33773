import type { FastifyInstance, preHandlerAsyncHookHandler } from 'fastify'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Defaults a schema cannot state because they depend on another member (a mandate's
     * budget_amount is its max_amount). Applied after validation, so the idempotency fingerprint and
     * the service both see the request as it will be processed.
     */
    bodyDefaults?: (body: never) => unknown
  }
}

export function registerBodyDefaults(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const defaults = route.config?.bodyDefaults
    if (!defaults) return
    const apply: preHandlerAsyncHookHandler = async (request) => {
      request.body = defaults(request.body as never)
    }
    const existing = route.preHandler
    route.preHandler = existing === undefined ? [apply] : [apply, ...(Array.isArray(existing) ? existing : [existing])]
  })
}
