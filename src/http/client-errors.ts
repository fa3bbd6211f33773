import http from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { newId } from '../lib/ids.js'
import { errorBody, toAppError } from './error-handler.js'
import { type AppError, errors } from '../lib/errors.js'
import { logRequest, setResponseHeaders } from './request-context.js'
import { API_VERSION } from './version.js'

/**
 * Requests that never reach a route still get the contract's envelope, Request-Id and API-Version.
 *
 * Two layers answer them:
 * - Fastify's router (`frameworkErrors`): a path that is not valid percent-encoding, or a path
 *   segment longer than MAX_PARAM_LENGTH. A request object exists, but no hook runs.
 * - Node's HTTP parser (`clientErrorHandler`): request line and headers over the limit, an unknown
 *   method, a bad Transfer-Encoding... There is only the socket: the answer is written by hand.
 * - node:http itself (`registerConnectionAnswers`): no Host header on HTTP/1.1, an `Expect` other than
 *   100-continue, a CONNECT. node:http would answer the first two with a bare 400 or 417 and drop the
 *   third without a word.
 *
 * Neither logs the error object: a parser error carries the raw request bytes (`rawPacket`), and
 * with them the caller's `Authorization` header.
 */

/**
 * Longest path parameter the router hands to a route. Ids are validated by the route's schema
 * (IdParams: up to 255 characters, answered 400 `parameter_invalid`); a segment longer than this
 * is not an id of any kind and is answered 414 `uri_too_long` before routing.
 */
export const MAX_PARAM_LENGTH = 1024

/** Fastify's `frameworkErrors` option. */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const appError = frameworkAppError(error)
  if (appError.status >= 500) request.log.error({ err: error }, 'framework error')
  // This request ran no hooks: headers and the log line are set here.
  setResponseHeaders(request, reply)
  reply.status(appError.status).headers(appError.headers).send(errorBody(appError, request.id))
  logRequest(request, reply, 'framework_error')
}

function frameworkAppError(error: FastifyError): AppError {
  switch (error.code) {
    case 'FST_ERR_BAD_URL': return errors.invalidUrl()
    case 'FST_ERR_MAX_PARAM_LENGTH': return errors.uriTooLong(MAX_PARAM_LENGTH)
    default: return toAppError(error)
  }
}

/** Parser errors Node reports on a connection (see `clientError` in node:http). */
interface ClientError extends Error {
  code?: string
  reason?: string
}

function clientAppError(error: ClientError): AppError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW': return errors.requestHeaderFieldsTooLarge(http.maxHeaderSize)
    case 'ERR_HTTP_REQUEST_TIMEOUT': return errors.requestTimeout()
    default: {
      // llhttp's reasons are fixed phrases ("Invalid method encountered"), never request bytes.
      const reason = typeof error.reason === 'string' && /^[\w `'().,-]{1,100}$/.test(error.reason) ? error.reason : 'parse error'
      return errors.malformedRequest(reason)
    }
  }
}

/** A complete HTTP/1.1 answer with the envelope, for a connection whose request could not be parsed. */
export function clientErrorResponse(appError: AppError, requestId: string): string {
  const body = JSON.stringify(errorBody(appError, requestId))
  const headers: Record<string, string> = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    ...standardHeaders(requestId),
    ...appError.headers,
    Date: new Date().toUTCString(),
    Connection: 'close',
  }
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`)
  return `HTTP/1.1 ${appError.status} ${http.STATUS_CODES[appError.status] ?? 'Error'}\r\n${lines.join('\r\n')}\r\n\r\n${body}`
}

/** How long a connection may stay open after its error answer, for the client to read it. */
const LINGER_MS = 2000
const answered = new WeakSet<Socket>()

/** Fastify's `clientErrorHandler` option; `this` is the Fastify instance. */
export function clientErrorHandler(this: FastifyInstance, error: ClientError, socket: Socket): void {
  // A reset connection has nobody to answer; the parser may report the same connection again after
  // its answer (more bytes, then end of stream): it was answered once.
  if (error.code === 'ECONNRESET' || socket.destroyed || answered.has(socket)) return
  answered.add(socket)
  const appError = clientAppError(error)
  const requestId = newId('req')
  this.log.info({ request_id: requestId, status: appError.status, error_code: error.code, code: appError.code }, 'client error')
  // A request parsed before the bad bytes (keep-alive, pipelined) is still being answered: its
  // answer goes first, whole, then this one. Writing now would cut into it.
  const inFlight = (socket as Socket & { _httpMessage?: http.ServerResponse | null })._httpMessage
  if (inFlight && !inFlight.writableFinished) {
    inFlight.once('finish', () => answer(socket, clientErrorResponse(appError, requestId)))
    return
  }
  answer(socket, clientErrorResponse(appError, requestId))
}

function answer(socket: Socket, response: string): void {
  if (socket.destroyed || !socket.writable) {
    socket.destroy()
    return
  }
  // end(), not destroy(): the client may still be sending, and closing with unread bytes would reset
  // the connection before it reads the answer. What it sends meanwhile is read and dropped; the
  // connection is closed once both sides ended, or after LINGER_MS at the latest.
  socket.end(response)
  // Read on (a socket handed over on CONNECT is paused), so that the client's end is seen.
  socket.resume()
  const linger = setTimeout(() => socket.destroy(), LINGER_MS)
  linger.unref()
  socket.once('close', () => clearTimeout(linger))
}

/**
 * The answers node:http would otherwise make itself. The Host check needs `http.requireHostHeader`
 * off in the Fastify options (app.ts), or node:http answers first.
 */
export function registerConnectionAnswers(app: FastifyInstance): void {
  // RFC 9112 section 3.2: an HTTP/1.1 request without Host is a 400.
  app.addHook('onRequest', (request, reply, done) => {
    const raw = request.raw
    if (raw.headers.host === undefined && raw.httpVersionMajor === 1 && raw.httpVersionMinor === 1) {
      reply.header('Connection', 'close')
      return done(errors.malformedRequest('an HTTP/1.1 request must have a Host header'))
    }
    done()
  })

  app.server.on('checkExpectation', (request: http.IncomingMessage, response: http.ServerResponse) => {
    const requestId = newId('req')
    const appError = errors.expectationFailed()
    const body = JSON.stringify(errorBody(appError, requestId))
    // The body the client holds back is never read: the connection cannot be reused.
    response.shouldKeepAlive = false
    response.writeHead(appError.status, {
      ...standardHeaders(requestId),
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
    })
    response.end(body)
    app.log.info({ request_id: requestId, method: request.method, route: 'expectation_failed', status: appError.status }, 'request')
  })

  app.server.on('connect', (request: http.IncomingMessage, socket: Socket) => {
    const requestId = newId('req')
    const appError = errors.routeNotFound(request.method ?? 'CONNECT', request.url ?? '')
    app.log.info({ request_id: requestId, method: request.method, route: 'not_found', status: appError.status }, 'request')
    answer(socket, clientErrorResponse(appError, requestId))
  })
}

function standardHeaders(requestId: string): Record<string, string> {
  return { 'Request-Id': requestId, 'API-Version': API_VERSION, 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' }
}
