import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { isDatabaseUnavailable } from '../db/errors.js'
import { AppError, errors } from '../lib/errors.js'
import { toFieldErrors } from './validation.js'

export const BODY_LIMIT_BYTES = 1024 * 1024

/** Maps anything thrown while serving a request onto the error taxonomy. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error
  const e = error as Partial<FastifyError>
  if (e.validation) return errors.validation(toFieldErrors(e.validation as never, e.validationContext))
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': return errors.unsupportedMediaType(undefined)
    case 'FST_ERR_CTP_BODY_TOO_LARGE': return errors.payloadTooLarge(BODY_LIMIT_BYTES)
  }
  if (isDatabaseUnavailable(error)) return errors.serviceUnavailable()
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return errors.badRequest(e.message ?? 'Bad request')
  }
  return errors.internal()
}

/** The contract's error envelope. */
export function errorBody(error: AppError, requestId: string) {
  return {
    error: {
      type: error.type,
      code: error.code,
      message: error.message,
      ...(error.param !== undefined ? { param: error.param } : {}),
      ...(error.errors !== undefined ? { errors: error.errors } : {}),
      request_id: requestId,
    },
  }
}

function render(error: AppError, request: FastifyRequest, reply: FastifyReply) {
  return reply.status(error.status).headers(error.headers).send(errorBody(error, request.id))
}

/** One error handler for every route and one not-found handler, both rendering the envelope. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const appError = toAppError(error)
    if (appError.status >= 500) request.log.error({ err: error }, 'request failed')
    // The content type of an unparseable request is echoed back to help the caller.
    if (appError.code === 'unsupported_media_type') {
      return render(errors.unsupportedMediaType(request.headers['content-type']), request, reply)
    }
    return render(appError, request, reply)
  })

  app.setNotFoundHandler((request, reply) => render(errors.routeNotFound(request.method, request.url), request, reply))
}
