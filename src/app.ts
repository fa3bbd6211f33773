import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import type { Config } from './config.js'
import type { Database } from './db/database.js'
import { authenticate } from './http/auth.js'
import { BODY_LIMIT_BYTES, registerErrorHandling } from './http/error-handler.js'
import { registerJsonParser } from './http/json-parser.js'
import { registerOpenApi } from './http/openapi.js'
import { registerRequestContext } from './http/request-context.js'
import { ErrorResponse } from './http/schemas.js'
import { registerValidators } from './http/validation.js'
import { type Clock, systemClock } from './lib/clock.js'
import { newId } from './lib/ids.js'
import { createAccountService } from './modules/accounts/service.js'
import { healthRoutes } from './modules/health/routes.js'
import { WishSchema } from './modules/wishes/schemas.js'
import { wishRoutes } from './modules/wishes/routes.js'
import { createWishService } from './modules/wishes/service.js'

export interface AppDeps {
  config: Config
  db: Database
  clock?: Clock
  /** A pino logger (the server's); tests leave it out and get a silent app. */
  logger?: FastifyBaseLogger
}

/** Builds the whole HTTP application around its dependencies. server.ts starts it; tests inject into it. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const clock = deps.clock ?? systemClock
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
    genReqId: () => newId('req'),
    requestIdHeader: false,
    // Fastify's own two lines per request are replaced by one line of ours (request-context.ts).
    logController: new LogController({ requestIdLogLabel: 'request_id', disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
    return503OnClosing: true,
  }).withTypeProvider<TypeBoxTypeProvider>()

  registerValidators(app)
  // JSON only: any other media type, text/plain included, is a 415.
  registerJsonParser(app)
  // A POST or PUT with no body at all is validated as {} so the answer names the missing members.
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined && (request.method === 'POST' || request.method === 'PUT')) request.body = {}
  })
  app.addSchema(ErrorResponse)
  app.addSchema(WishSchema)
  registerRequestContext(app)
  registerErrorHandling(app)
  await registerOpenApi(app)

  const accounts = createAccountService({ db: deps.db, clock })
  const wishes = createWishService({ db: deps.db, clock, config: deps.config })

  await app.register(healthRoutes, { db: deps.db })
  await app.register(async (api) => {
    api.addHook('onRequest', authenticate(accounts))
    await api.register(wishRoutes, { wishes })
  })
  return app
}
