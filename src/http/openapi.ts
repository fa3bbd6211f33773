import swagger from '@fastify/swagger'
import { Type } from '@sinclair/typebox'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type RouteOptions } from 'fastify'
import { sharedSerializers } from '../lib/shared-serializers.js'
import { ERROR_SCHEMAS, ERROR_STATUSES, ErrorResponse, errorResponse } from './schemas.js'
import { API_VERSION } from './version.js'

const DESCRIPTION = `Wishpay lets people describe what they want in plain words (wishes), grant their AI agents a
bounded authority to spend (mandates), and lets agents pay against it (payments, over AP2 and ACP).

Authenticate with \`Authorization: Bearer <key>\`: \`sk_\` keys can do everything, \`rk_\` keys can only read,
\`ak_\` keys (an agent's) can only pay with the mandates granted to their agent and read those and their payments.
Every response carries \`Request-Id\` and \`API-Version\`. Errors share one envelope:
\`{ "error": { "type", "code", "message", "param", "errors", "request_id" } }\`; each status lists the
types and codes it can carry (Error400, Error401, ...).`

/**
 * Statuses any request can get, whatever the route: a malformed request, headers over the limit, too
 * slow, or expecting what the server does not do (answered on the connection, src/http/client-errors.ts),
 * an internal error, and 503 from a database that does not answer or a server that is shutting down
 * (src/http/draining.ts). Routes that read a body declare 413 and 415 themselves (writeErrors).
 */
const ANY_REQUEST_STATUSES = [400, 408, 417, 431, 500, 503]
/** A path segment longer than any id is refused before routing (src/http/client-errors.ts). */
const PATH_PARAMETER_STATUSES = [414]
/** What the idempotency plugin answers (src/http/idempotency.ts): in use, reused for another request. */
const IDEMPOTENCY_STATUSES = [409, 422]
/** Outcomes the idempotency plugin saves and replays, besides the route's success (contract section 5). */
const REPLAYED_ERROR_STATUSES = new Set(['404', '422'])
/** Private marker from `transform` to `transformObject`; never left in the document. */
const IDEMPOTENCY_MARK = 'x-wishpay-idempotency'
/** A route that speaks another protocol's version (ACP) marks its schema with it; see completeDocument. */
export const PROTOCOL_VERSION_MARK = 'x-wishpay-protocol-version'

type Responses = Record<string, unknown>

function isErrorRef(schema: unknown): boolean {
  return typeof schema === 'object' && schema !== null && (schema as { $ref?: unknown }).$ref === ErrorResponse.$id
}

/**
 * Completes a route's responses with what the shared plugins can answer on it, so that each route's
 * schema (which serializes its answers and makes the OpenAPI document) lists every status it can give.
 * A bare reference to the generic Error becomes the schema of its status.
 */
function completeResponses(route: RouteOptions): void {
  const schema = route.schema as { hide?: boolean, response?: Responses } | undefined
  if (!schema || schema.hide) return
  const response: Responses = { ...schema.response }
  const implied = [...ANY_REQUEST_STATUSES]
  if (route.url.includes(':')) implied.push(...PATH_PARAMETER_STATUSES)
  if (route.config?.idempotency) implied.push(...IDEMPOTENCY_STATUSES)
  for (const status of implied) if (!(status in response)) response[status] = errorResponse(status)

  for (const [status, declared] of Object.entries(response)) {
    if (!ERROR_STATUSES[Number(status)]) continue
    const media = (declared as { content?: Record<string, { schema?: unknown }> }).content?.['application/json']
    if (isErrorRef(declared)) {
      const description = (declared as { description?: string }).description
      response[status] = description === undefined ? errorResponse(Number(status)) : Type.Ref(`Error${status}`, { description })
    } else if (media && isErrorRef(media.schema)) {
      media.schema = { $ref: `Error${status}` }
    }
  }
  route.schema = { ...route.schema, response }
}

// ---------------------------------------------------------------- document-only additions

const HEADERS = {
  'Request-Id': {
    description: 'This request\'s id; the same as `request_id` in an error body and in the server\'s log line.',
    required: true,
    schema: { type: 'string', pattern: '^req_[0-9a-z]+$', examples: ['req_01jf3v7k8m2n4p6q8r0s2t4v6w'] },
  },
  'API-Version': {
    description: 'The version of the API that answered.',
    required: true,
    schema: { type: 'string', enum: [API_VERSION] },
  },
  'Idempotent-Replayed': {
    description: 'Present, `true`, when this is the saved answer to an earlier request with the same idempotency key.',
    schema: { type: 'string', enum: ['true'] },
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying.',
    required: true,
    schema: { type: 'integer', minimum: 1, examples: [1] },
  },
  RateLimit: {
    description: 'What is left of this key\'s limit in the current window (IETF draft "RateLimit header fields").',
    schema: { type: 'string', examples: ['"per-key";r=99;t=1'] },
  },
  'RateLimit-Policy': {
    description: 'This key\'s limit: q requests per w seconds (RATE_LIMIT_PER_SECOND).',
    schema: { type: 'string', examples: ['"per-key";q=100;w=1'] },
  },
  'WWW-Authenticate': {
    description: 'The scheme to authenticate with: Bearer.',
    required: true,
    schema: { type: 'string', examples: ['Bearer realm="wishpay"'] },
  },
}
const header = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` })
/** Retry-After on a 409 comes only with idempotency_key_in_use, so there it is optional. */
const RETRY_AFTER_ON_CONFLICT = { ...HEADERS['Retry-After'], required: false, description: 'Seconds to wait; sent with `idempotency_key_in_use`.' }

const IDEMPOTENCY_KEY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: 'Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$', examples: ['5f0c2a9e-3d1b-4c8e-9a57-2b6d0e4f8c13'] },
}

interface Operation {
  security?: unknown[]
  parameters?: unknown[]
  requestBody?: { required?: boolean, content?: Record<string, { schema?: { required?: string[] } }> }
  responses?: Record<string, { headers?: Record<string, unknown> }>
  [IDEMPOTENCY_MARK]?: string
  [PROTOCOL_VERSION_MARK]?: string
}

/** The request headers of a route of another protocol (ACP): its version, and its own required Idempotency-Key. */
function protocolParameters(version: string): unknown[] {
  return [
    { name: 'API-Version', in: 'header', required: true, description: `The protocol version: ${version} (else 400 missing_api_version or unsupported_api_version, with supported_versions).`, schema: { type: 'string', enum: [version] } },
    { name: 'Idempotency-Key', in: 'header', required: true, description: 'Required (else 400 idempotency_key_required); scoped to this path; the same body replays the first answer, another is 422 idempotency_conflict, one still running 409 idempotency_in_flight.', schema: { type: 'string', minLength: 1, maxLength: 255 } },
  ]
}

interface Document {
  security?: unknown[]
  paths?: Record<string, Record<string, Operation>>
  components?: Record<string, Record<string, unknown> | undefined>
}

/**
 * What the route schemas cannot say, added to the generated document: the Idempotency-Key header,
 * the headers of every response, and that a body with no required member may be left out (the app
 * validates an absent POST or PUT body as `{}`, src/app.ts).
 */
function completeDocument(doc: Document): Document {
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(item)) {
      const idempotent = op[IDEMPOTENCY_MARK] !== undefined
      const protocolVersion = op[PROTOCOL_VERSION_MARK]
      delete op[IDEMPOTENCY_MARK]
      delete op[PROTOCOL_VERSION_MARK]
      if (protocolVersion !== undefined) op.parameters = [...(op.parameters ?? []), ...protocolParameters(protocolVersion)]
      else if (idempotent) op.parameters = [...(op.parameters ?? []), { $ref: '#/components/parameters/IdempotencyKey' }]

      const body = op.requestBody?.content?.['application/json']?.schema
      if (op.requestBody && body && !(body.required?.length)) op.requestBody.required = false

      const authenticated = (op.security ?? doc.security ?? []).length > 0
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        // Answers made before routing (408, 417, 431) are Wishpay's, with its version.
        const ownVersion = protocolVersion !== undefined && !['408', '417', '431'].includes(status)
        const headers: Record<string, unknown> = {
          'Request-Id': header('Request-Id'),
          'API-Version': ownVersion ? { ...HEADERS['API-Version'], schema: { type: 'string', enum: [protocolVersion] } } : header('API-Version'),
        }
        // A read key on a write is refused before the limiter counts the request; failed authentications
        // (401, and their 429) are counted per client address, with headers of their own policy.
        if (authenticated && status !== '403') {
          headers.RateLimit = header('RateLimit')
          headers['RateLimit-Policy'] = header('RateLimit-Policy')
        }
        if (idempotent && (status.startsWith('2') || REPLAYED_ERROR_STATUSES.has(status))) headers['Idempotent-Replayed'] = header('Idempotent-Replayed')
        if (status === '401') headers['WWW-Authenticate'] = header('WWW-Authenticate')
        if (status === '409') headers['Retry-After'] = RETRY_AFTER_ON_CONFLICT
        if (status === '429' || status === '503') headers['Retry-After'] = header('Retry-After')
        response.headers = { ...response.headers, ...headers }
      }
    }
  }
  doc.components = {
    ...doc.components,
    headers: { ...doc.components?.headers, ...HEADERS },
    parameters: { ...doc.components?.parameters, IdempotencyKey: IDEMPOTENCY_KEY_PARAMETER },
  }
  return doc
}

/**
 * OpenAPI 3.1 generated from the route schemas, served at /openapi.json, and an interactive
 * reference at /docs. Registered before the routes so every route is seen.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  // completeResponses gives every route the same error statuses: their serializers are compiled once
  // for the whole application, not once per route (src/lib/shared-serializers.ts).
  app.setSchemaController(sharedSerializers)
  for (const schema of ERROR_SCHEMAS) app.addSchema(schema)
  app.addHook('onRoute', completeResponses)

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Wishpay API',
        version: API_VERSION,
        description: DESCRIPTION,
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      // Relative: the server that serves this document, on whatever host and port it listens.
      servers: [{ url: '/', description: 'The server this document was fetched from' }],
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
    // Idempotent routes are marked for transformObject, which adds the Idempotency-Key header.
    transform: ({ schema, url, route }) => {
      const mode = route.config?.idempotency
      return { schema: mode && schema ? { ...schema, [IDEMPOTENCY_MARK]: mode } as typeof schema : schema, url }
    },
    transformObject: (documentObject) => completeDocument((documentObject as { openapiObject: Document }).openapiObject) as never,
    // Shared schemas keep their $id as their component name (Wish, Error) instead of def-N.
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  })
  registerDocs(app)

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

// ---------------------------------------------------------------- /docs, loaded on first use

/** What an answer of the reference keeps: the rest (Request-Id, security headers) is this app's. */
const DOCS_HEADERS = ['content-type', 'cache-control', 'etag', 'last-modified', 'location', 'accept-ranges', 'content-range']
/** What a request to the reference passes on: conditional and range requests work as @fastify/static serves them. */
const DOCS_REQUEST_HEADERS = ['if-none-match', 'if-modified-since', 'range', 'if-range', 'accept']

/**
 * The interactive reference at /docs (@fastify/swagger-ui, its static files and a YAML library, a few
 * MB), built on the first request to it in an app of its own that shows this app's document; a server
 * whose /docs nobody opens never loads it. Answers go through this app's routes, with its hooks.
 */
function registerDocs(app: FastifyInstance): void {
  let docs: Promise<FastifyInstance> | undefined
  const build = async () => {
    const { default: swaggerUi } = await import('@fastify/swagger-ui')
    const inner = Fastify({ logger: false })
    // This app's document, final once it is ready (a request is answered only then), as swagger-ui's
    // /docs/json and /docs/yaml serve it.
    // (The plugin's types know OpenAPI 3.0 documents only; this one is 3.1.)
    await inner.register(swagger, { mode: 'static', specification: { document: app.swagger() as never } })
    await inner.register(swaggerUi, { routePrefix: '/docs', uiConfig: { persistAuthorization: true } })
    await inner.ready()
    return inner
  }
  const answer = async (request: FastifyRequest, reply: FastifyReply) => {
    const inner = await (docs ??= build().catch((error: unknown) => {
      docs = undefined
      throw error
    }))
    const headers: Record<string, string> = {}
    for (const name of DOCS_REQUEST_HEADERS) {
      const value = request.headers[name]
      if (typeof value === 'string') headers[name] = value
    }
    const res = await inner.inject({ method: request.method as 'GET' | 'HEAD', url: request.url, headers })
    // A file the reference does not have is this app's 404, in its envelope.
    if (res.statusCode === 404) return reply.callNotFound()
    reply.code(res.statusCode)
    for (const name of DOCS_HEADERS) {
      const value = res.headers[name]
      if (value !== undefined) reply.header(name, value)
    }
    return reply.send(res.rawPayload)
  }
  const schema = { hide: true }
  app.get('/docs', { schema }, answer)
  app.get('/docs/*', { schema }, answer)
}
