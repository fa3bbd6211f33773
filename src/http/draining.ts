import type { FastifyInstance } from 'fastify'
import { errors } from '../lib/errors.js'

/** Process state the HTTP layer needs to know: a draining server takes no new work. */
export interface Lifecycle {
  draining: boolean
}

/**
 * Once the server drains (SIGTERM), a request that arrives on an open connection is answered 503
 * `service_unavailable` with Retry-After and `Connection: close`, so the client retries elsewhere;
 * requests already running are not touched. /readyz turns 503 at the same moment.
 */
export function registerDraining(app: FastifyInstance, lifecycle: Lifecycle): void {
  // Callback-style hooks here and in the other per-request hooks: no promise per request.
  app.addHook('onRequest', (_request, reply, done) => {
    if (!lifecycle.draining) return done()
    reply.header('Connection', 'close')
    done(errors.serviceUnavailable())
  })
}
