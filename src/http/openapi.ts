import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { API_VERSION } from './version.js'

const DESCRIPTION = `Wishpay lets people describe what they want in plain words (wishes), grant their AI agents a
bounded authority to spend (mandates), and lets agents pay against it (payments, over AP2 and ACP).

Authenticate with \`Authorization: Bearer <key>\`: \`sk_\` keys can do everything, \`rk_\` keys can only read.
Every response carries \`Request-Id\` and \`API-Version\`. Errors share one envelope:
\`{ "error": { "type", "code", "message", "param", "errors", "request_id" } }\`.`

/**
 * OpenAPI 3.1 generated from the route schemas, served at /openapi.json, and an interactive
 * reference at /docs. Registered before the routes so every route is seen.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Wishpay API',
        version: API_VERSION,
        description: DESCRIPTION,
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      servers: [{ url: 'http://127.0.0.1:3000', description: 'Local server started by npm start' }],
      tags: [
        { name: 'Wishes', description: 'Natural-language descriptions of what to obtain' },
        { name: 'Mandates', description: 'Bounded authority for an agent to spend' },
        { name: 'Payments', description: 'Payments against a mandate, and their refunds' },
        { name: 'Events', description: 'Every state change, kept 30 days; also the body of webhooks' },
        { name: 'Webhooks', description: 'Endpoints that receive events, signed per Standard Webhooks v1' },
        { name: 'System', description: 'Health, readiness and this description; no authentication' },
      ],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key: sk_ (read and write) or rk_ (read only)' },
        },
      },
      security: [{ bearerAuth: [] }],
    },
    // Shared schemas keep their $id as their component name (Wish, Error) instead of def-N.
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  })
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { persistAuthorization: true } })

  app.get('/openapi.json', {
    schema: {
      operationId: 'getOpenApi',
      summary: 'This API description',
      description: 'OpenAPI 3.1, generated from the route schemas.',
      tags: ['System'],
      security: [],
      response: {
        200: Type.Object({}, {
          additionalProperties: true,
          description: 'The OpenAPI document',
          examples: [{ openapi: '3.1.0', info: { title: 'Wishpay API', version: API_VERSION }, paths: {} }],
        }),
      },
    },
  }, async () => app.swagger())
}
