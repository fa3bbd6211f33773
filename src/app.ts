import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import type { Config } from './config.js'
import type { Database } from './db/database.js'
import { authenticate } from './http/auth.js'
import { dashboardRoutes } from './http/dashboard.js'
import { type Lifecycle, registerDraining } from './http/draining.js'
import { registerTurnBudget } from './http/turn-budget.js'
import { BODY_LIMIT_BYTES, registerErrorHandling } from './http/error-handler.js'
import { clientErrorHandler, frameworkErrorHandler, MAX_PARAM_LENGTH, registerConnectionAnswers } from './http/client-errors.js'
import { registerJsonParser } from './http/json-parser.js'
import { createMetrics, type Metrics, registerMetrics } from './http/metrics.js'
import { registerOpenApi } from './http/openapi.js'
import { registerRateLimit } from './http/rate-limit.js'
import { registerRequestContext, REQUEST_ID_LOG_LABEL } from './http/request-context.js'
import { LazyRequestLogger } from './http/request-logger.js'
import { ErrorResponse } from './http/schemas.js'
import { registerValidators } from './http/validation.js'
import { registerTextGuard } from './http/text-guard.js'
import { type Clock, systemClock } from './lib/clock.js'
import { newId } from './lib/ids.js'
import { registerBodyDefaults } from './http/body-defaults.js'
import { registerIdempotency } from './http/idempotency.js'
import { agentRoutes } from './modules/agents/routes.js'
import { AgentSchema } from './modules/agents/schemas.js'
import { trustedKeyRoutes } from './modules/trusted-keys/routes.js'
import { TrustedKeySchema } from './modules/trusted-keys/schemas.js'
import { ap2Routes } from './modules/ap2/routes.js'
import { NonceSchema } from './modules/ap2/schemas.js'
import { acpDiscoveryRoutes, acpRoutes } from './modules/acp/routes.js'
import { vaultTokenRoutes } from './modules/vault-tokens/routes.js'
import { VaultTokenSchema } from './modules/vault-tokens/schemas.js'
import { eventRoutes } from './modules/events/routes.js'
import { createEventStreams } from './modules/events/stream.js'
import { EventSchema } from './modules/events/schemas.js'
import { healthRoutes } from './modules/health/routes.js'
import { mandateRoutes } from './modules/mandates/routes.js'
import type { Processor } from './modules/payments/processors/processor.js'
import { MandateSchema } from './modules/mandates/schemas.js'
import { paymentRoutes } from './modules/payments/routes.js'
import { jwksRoutes, receiptRoutes } from './modules/receipts/routes.js'
import { PaymentSchema, RefundSchema } from './modules/payments/schemas.js'
import { CreatedWebhookEndpointSchema, DeliveryAttemptSchema, DeliveryResendSchema, WebhookEndpointSchema } from './modules/webhooks/schemas.js'
import { webhookRoutes } from './modules/webhooks/routes.js'
import { WishSchema } from './modules/wishes/schemas.js'
import { wishRoutes } from './modules/wishes/routes.js'
import { createServices, type Services } from './services.js'

export interface AppDeps {
  config: Config
  db: Database
  clock?: Clock
  /** A pino logger (the server's); tests leave it out and get a silent app. */
  logger?: FastifyBaseLogger
  /** Services already built (the server shares them with the job runner); built here if absent. */
  services?: Services
  /** The payment processor adapter when services are built here; the sandbox if absent. */
  processor?: Processor
  /** Metrics shared with the job runner (the server's); created here if absent. */
  metrics?: Metrics
  /** Set draining by the server when it stops; never draining if absent. */
  lifecycle?: Lifecycle
}

/** Builds the whole HTTP application around its dependencies. server.ts starts it; tests inject into it. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const clock = deps.clock ?? systemClock
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
    genReqId: () => newId('req'),
    childLoggerFactory: (logger, bindings, options) => new LazyRequestLogger(logger as Logger, bindings, options) as unknown as FastifyBaseLogger,
    requestIdHeader: false,
    // Fastify's own two lines per request are replaced by one line of ours (request-context.ts).
    logController: new LogController({ requestIdLogLabel: REQUEST_ID_LOG_LABEL, disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
    // Draining answers its own 503 envelope (http/draining.ts), from SIGTERM on, and the server closes
    // idle connections itself (server.ts): Fastify's immediate sweep would reset a connection accepted
    // just before the listener closed, before its request could arrive.
    return503OnClosing: false,
    forceCloseConnections: false,
    // Requests that fail before any route still get the envelope (http/client-errors.ts).
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    // The Host check is ours, so that its 400 is the envelope (registerConnectionAnswers).
    http: { requireHostHeader: false },
  }).withTypeProvider<TypeBoxTypeProvider>()

  try {
    await assemble(app, deps, clock)
  } catch (error) {
    // The caller never gets an app that failed to build, so it closes here: its onClose hooks stop what
    // it had started (the metrics' commit listener, the rate limiter's Redis client).
    await app.close().catch(() => undefined)
    throw error
  }
  return app
}

/** Everything the app serves, in order: hooks, shared schemas, cross-cutting plugins, then the routes. */
async function assemble(app: FastifyInstance, deps: AppDeps, clock: Clock): Promise<void> {
  registerValidators(app)
  // JSON only: any other media type, text/plain included, is a 415.
  registerJsonParser(app)
  // A POST or PUT with no body at all is validated as {} so the answer names the missing members.
  app.addHook('preValidation', (request, _reply, done) => {
    if (request.body === undefined && (request.method === 'POST' || request.method === 'PUT')) request.body = {}
    done()
  })
  registerTextGuard(app)
  const shared = [ErrorResponse, WishSchema, MandateSchema, PaymentSchema, RefundSchema, EventSchema,
    WebhookEndpointSchema, CreatedWebhookEndpointSchema, DeliveryAttemptSchema, DeliveryResendSchema, AgentSchema, TrustedKeySchema, NonceSchema, VaultTokenSchema]
  for (const schema of shared) app.addSchema(schema)
  const lifecycle = deps.lifecycle ?? { draining: false }
  registerRequestContext(app)
  registerConnectionAnswers(app)
  registerErrorHandling(app)
  registerDraining(app, lifecycle)
  // After draining, which judges a request by when it arrived; before authentication and the route's work.
  registerTurnBudget(app)
  await registerOpenApi(app)
  // Before any route: these act on the routes that declare `config.bodyDefaults` / `config.idempotency`.
  registerBodyDefaults(app)
  registerIdempotency(app, { db: deps.db, clock, ttlSeconds: deps.config.idempotencyTtlSeconds })

  const limitRate = await registerRateLimit(app, { perSecond: deps.config.rateLimitPerSecond, redisUrl: deps.config.redisUrl, logger: app.log })
  const services = deps.services ?? createServices({ config: deps.config, db: deps.db, clock, ...(deps.processor ? { processor: deps.processor } : {}) })

  registerMetrics(app, deps.metrics ?? createMetrics({ db: deps.db, clock }), deps.config.metricsToken)
  await app.register(healthRoutes, { db: deps.db, lifecycle })
  await app.register(jwksRoutes, { receipts: services.receipts })
  await app.register(acpDiscoveryRoutes)
  // The web dashboard (not part of the API: hidden from /openapi.json); it calls the API with the user's key.
  await app.register(dashboardRoutes)
  await app.register(async (api) => {
    api.addHook('onRequest', authenticate(services.accounts))
    api.addHook('onRequest', limitRate)
    await api.register(wishRoutes, { wishes: services.wishes })
    await api.register(mandateRoutes, { mandates: services.mandates })
    await api.register(paymentRoutes, { payments: services.payments })
    await api.register(eventRoutes, { events: services.events, streams: createEventStreams({ db: deps.db, clock, settleMs: deps.config.eventStreamSettleMs, pollMs: deps.config.eventStreamPollMs }) })
    await api.register(webhookRoutes, { webhooks: services.webhooks })
    await api.register(agentRoutes, { agents: services.agents })
    await api.register(trustedKeyRoutes, { trustedKeys: services.trustedKeys })
    await api.register(ap2Routes, { nonces: services.nonces })
    await api.register(vaultTokenRoutes, { vaultTokens: services.vaultTokens })
    await api.register(acpRoutes, { vaultTokens: services.vaultTokens, acpClientKeys: services.trustedKeys.acpClientKeys, clock })
    await api.register(receiptRoutes, { receipts: services.receipts })
  })
}
