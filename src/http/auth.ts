import type { onRequestAsyncHookHandler } from 'fastify'
import type { AccountService } from '../modules/accounts/service.js'
import { errors } from './errors.js'

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])
const BEARER = /^Bearer(?:\s+(\S*))?\s*$/i

/**
 * Authenticates API routes from `Authorization: Bearer <key>`. Registered inside the API scope
 * only, so open routes never see it. Runs on onRequest, before any body is read.
 */
export function authenticate(accounts: Pick<AccountService, 'authenticate'>): onRequestAsyncHookHandler {
  return async (request) => {
    const header = request.headers.authorization
    const match = header === undefined ? null : BEARER.exec(header)
    if (!match) throw errors.authenticationRequired()
    const principal = match[1] ? await accounts.authenticate(match[1]) : undefined
    if (!principal) throw errors.invalidApiKey()
    if (principal.scope === 'read' && !READ_METHODS.has(request.method)) throw errors.insufficientScope()
    request.principal = principal
    request.ctx = { accountId: principal.accountId, requestId: request.id }
  }
}
