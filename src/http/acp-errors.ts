import type { FastifyError } from 'fastify'
import { AcpError, acpErrorFromValidation, acpErrors } from '../modules/acp/errors.js'
import type { AppError } from '../lib/errors.js'
import { toAppError } from './error-handler.js'

/**
 * Any error of an ACP route as ACP's flat error (rfc.delegate_payment.md 2.6, 4.2, 5.4): ACP's own
 * errors as they are; validation errors with a JSONPath `param`; Wishpay's errors (authentication, rate
 * limit, idempotency, body parsing, 5xx) under the type and code ACP names for them.
 */
export function toAcpError(error: unknown, body?: unknown): AcpError {
  if (error instanceof AcpError) return error
  const validation = (error as Partial<FastifyError>).validation
  if (validation && (error as Partial<FastifyError>).validationContext === 'body') return acpErrorFromValidation(validation as never, body)
  return fromAppError(toAppError(error))
}

function fromAppError(e: AppError): AcpError {
  const retryAfter = e.headers['Retry-After'] === undefined ? undefined : Number(e.headers['Retry-After'])
  if (e.param === 'idempotency_key' && e.code === 'parameter_missing') return acpErrors.idempotencyKeyRequired()
  switch (e.code) {
    case 'idempotency_key_reused': return acpErrors.idempotencyConflict()
    case 'idempotency_key_in_use': return acpErrors.idempotencyInFlight(retryAfter)
    case 'authentication_required':
    case 'invalid_api_key': return acpErrors.unauthorized()
    case 'rate_limited': return acpErrors.rateLimited(retryAfter)
  }
  if (e.status === 503) return acpErrors.serviceUnavailable(retryAfter)
  if (e.status >= 500) return acpErrors.processingError()
  const param = e.param === undefined ? undefined : e.param.startsWith('$') ? e.param : `$.${e.param}`
  return new AcpError({ status: e.status, type: 'invalid_request', code: e.code, message: e.message, param, headers: e.headers })
}

/** The body of a saved ACP refusal (http/idempotency.ts `errorBody`). */
export const acpErrorBody = (error: AppError): unknown => fromAppError(error).toBody()
