import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction, onRequestHookHandler } from 'fastify'
import type { Scope } from '../modules/accounts/keys.js'
import type { AccountService, Principal } from '../modules/accounts/service.js'
import { errors } from '../lib/errors.js'

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * The only routes an agent key (ak_) may call: pay (and ask for an AP2 nonce to pay with), and read
 * payments, their receipts and mandates. The services keep
 * it to its own objects (mandates granted to its agent, their payments). Every other route is 403.
 */
const AGENT_ROUTES = new Set([
  'POST /payments', 'GET /payments', 'GET /payments/:id', 'GET /payments/:id/receipt',
  'GET /mandates', 'GET /mandates/:id',
  // The nonce an agent binds its AP2 closed mandate to.
  'POST /ap2/nonces',
])

/** Whether a key of this scope may call this route (method and route pattern). */
export function scopeAllows(scope: Scope, method: string, route: string | undefined): boolean {
  if (scope === 'write') return true
  if (scope === 'read') return READ_METHODS.has(method)
  return route !== undefined && AGENT_ROUTES.has(`${method === 'HEAD' ? 'GET' : method} ${route}`)
}
const BEARER = /^Bearer(?:\s+(\S*))?\s*$/i

/**
 * Authenticates API routes from `Authorization: Bearer <key>`. Registered inside the API scope
 * only, so open routes never see it. Runs on onRequest, before any body is read.
 *
 * A key that fails (malformed, unknown or revoked) counts against the client's address
 * (http/rate-limit.ts): past AUTH_FAILURES_PER_WINDOW in a window, failures are answered 429
 * `rate_limited` with Retry-After instead of 401. A valid key is always served: an address may be
 * shared by many clients (NAT, a proxy), and one of them failing must not lock the others out.
 *
 * Callback style: a key in the account service's cache is answered synchronously, so the common request
 * pays for no promise here.
 */
export function authenticate(accounts: Pick<AccountService, 'authenticate'>): onRequestHookHandler {
  return (request, reply, done) => {
    const header = request.headers.authorization
    const match = header === undefined ? null : BEARER.exec(header)
    if (!match) return done(errors.authenticationRequired())
    if (!match[1]) return refuse(request, reply, done)
    let found: ReturnType<typeof accounts.authenticate>
    try {
      found = accounts.authenticate(match[1])
    } catch (error) {
      return done(error as Error)
    }
    if (found instanceof Promise) {
      found.then((principal) => admit(request, reply, done, principal), done)
      return
    }
    admit(request, reply, done, found)
  }
}

function admit(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction, principal: Principal | undefined): void {
  if (!principal) return refuse(request, reply, done)
  if (!scopeAllows(principal.scope, request.method, request.routeOptions.url)) return done(errors.insufficientScope(principal.scope))
  request.principal = principal
  request.ctx = principal.agentId === null
    ? { accountId: principal.accountId, requestId: request.id }
    : { accountId: principal.accountId, requestId: request.id, agentId: principal.agentId }
  done()
}

/** 401, or 429 once the client's address has failed too often (http/rate-limit.ts). */
function refuse(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const counting = request.server.countAuthFailure?.(request, reply)
  if (counting === undefined) return done(errors.invalidApiKey())
  counting.then((retryAfter) => done(retryAfter === undefined ? errors.invalidApiKey() : errors.authFailuresLimited(retryAfter)), done)
}
