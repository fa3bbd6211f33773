import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import pino, { type Logger } from 'pino'
import type { RequestContext } from '../lib/request-context.js'
import type { Principal } from '../modules/accounts/service.js'
import { API_VERSION } from './version.js'
import { jsonQuoted, rememberedQuotes } from '../lib/json-quote.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by authentication on API routes; null on open routes. */
    principal: Principal | null
    ctx: RequestContext
  }
}

/** The name of the request id in every line a request logs (Fastify's `requestIdLogLabel`, app.ts). */
export const REQUEST_ID_LOG_LABEL = 'request_id'

const { chindingsSym, lsCacheSym, streamSym, timeSym } = pino.symbols

/** A pino logger's members that the request line is written with, under pino's exported symbols. */
type PinoMembers = Record<symbol, unknown>

/** pino's number for info, the request line's level. */
const INFO = 30

/**
 * The request line as the text pino writes for `{ request_id, ...line }` at info, built directly: the
 * level and time, the logger's bindings, the fields in order (an undefined one left out and a duration
 * that is not a finite number written null, as pino does), then `msg`. pino's generic path (building the
 * merged object, serializing each key, then the scrubbing hook over the whole line) was about 3 of a GET's
 * 50 µs of CPU (docs/performance.md, seventh pass). Neither redaction nor the hook could change a byte of
 * it: every value is ours (ids we generate, the request id included since app.ts reads no request-id
 * header; a method node's parser accepted; a route pattern; numbers). test/unit/request-line.test.ts holds
 * it to the line pino's redacting logger writes.
 */
function writeRequestLine(log: Logger, requestId: string, line: RequestLine): void {
  const members = log as unknown as PinoMembers
  const level = (members[lsCacheSym] as Record<number, string>)[INFO]
  const time = (members[timeSym] as () => string).call(log)
  const stream = members[streamSym] as { write(text: string): unknown }
  stream.write(`${level}${time}${members[chindingsSym] as string},"${REQUEST_ID_LOG_LABEL}":${jsonQuoted(requestId)}${
    line.account_id === undefined ? '' : `,"account_id":${jsonQuoted(line.account_id)}`}${
    line.agent_id === undefined ? '' : `,"agent_id":${jsonQuoted(line.agent_id)}`},"method":${quotedName(line.method)},"route":${
    quotedName(line.route)},"status":${line.status},"duration_ms":${
    Number.isFinite(line.duration_ms) ? line.duration_ms : null},"msg":"request"}\n`)
}

/** Methods and route patterns, quoted once each: a few dozen texts that every line repeats. */
const quotedName = rememberedQuotes()

interface RequestLine {
  account_id: string | undefined
  agent_id: string | undefined
  method: string
  route: string
  status: number
  duration_ms: number
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
  // Named in lower case, as Fastify stores and sends every header name (lib/reply.js lowercases it): a
  // name already in lower case is its own toLowerCase(), so no new string is made and then looked up in
  // V8's string table for each store, twice a header a request (docs/performance.md, twenty-seventh pass).
  reply.header('request-id', request.id)
  reply.header('api-version', API_VERSION)
  reply.header('x-content-type-options', 'nosniff')
  if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store')
}

/** The one log line of a request: ids and timings only, never headers or bodies. */
export function logRequest(request: FastifyRequest, reply: FastifyReply, route?: string): void {
  const principal = request.principal
  const line: RequestLine = {
    account_id: principal?.accountId,
    // The agent whose key (ak_) made the request; absent for account keys.
    agent_id: principal?.agentId || undefined,
    method: request.method,
    route: route ?? request.routeOptions.url ?? 'not_found',
    status: reply.statusCode,
    duration_ms: Math.round(reply.elapsedTime * 100) / 100,
  }
  const server: FastifyBaseLogger = request.server.log
  // Only a pino logger (the server's, tests' own) has levels to ask; Fastify's null logger writes nothing.
  if (typeof (server as Partial<Logger>).isLevelEnabled !== 'function') request.log.info(line, 'request')
  // The request's logger decides whether the line is written (its route may log less); the server's
  // writes it, with the request id where the request's logger's binding would have put it.
  else if ((request.log as Logger).isLevelEnabled('info')) writeRequestLine(server as Logger, request.id, line)
}
