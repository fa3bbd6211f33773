import type { components } from './generated/schema.js'

type Envelope = components['schemas']['Error']['error']

/** One failed parameter of a validation error. */
export type ParameterError = NonNullable<Envelope['errors']>[number]

export interface WishpayErrorFields {
  status?: number | undefined
  type: string
  code: string
  param?: string | undefined
  request_id?: string | undefined
  errors?: ParameterError[] | undefined
  headers?: Headers | undefined
}

/**
 * Every error the SDK throws. An answer from the API carries the contract's envelope: `type` (the
 * subclass), `code`, `param` (when one parameter is at fault) and `request_id` (quote it to support).
 */
export class WishpayError extends Error {
  /** HTTP status; undefined when no answer came (ConnectionError) or none applies (webhooks). */
  readonly status: number | undefined
  readonly type: string
  readonly code: string
  readonly param: string | undefined
  readonly request_id: string | undefined
  /** Every failed parameter, on validation errors. */
  readonly errors: ParameterError[]
  readonly headers: Headers | undefined

  constructor(message: string, fields: WishpayErrorFields, options?: ErrorOptions) {
    super(message, options)
    this.name = new.target.name
    this.status = fields.status
    this.type = fields.type
    this.code = fields.code
    this.param = fields.param
    this.request_id = fields.request_id
    this.errors = fields.errors ?? []
    this.headers = fields.headers
  }
}

/** 400, 404, 413, 415 …: the request is wrong; fix it before sending it again. */
export class InvalidRequestError extends WishpayError {}
/** 401: no key, or an unknown, malformed or revoked one. */
export class AuthenticationError extends WishpayError {}
/** 403: the key may not do this (a read-only key on a write, an agent key outside its routes). */
export class PermissionError extends WishpayError {}
/** 409: the object's state does not allow it, or the same idempotency key is still running. */
export class ConflictError extends WishpayError {}
/** 422 `idempotency_key_reused`: the key was used with a different request. */
export class IdempotencyError extends WishpayError {}
/** 422: the mandate, wish or payment does not allow it (`mandate_budget_exceeded`, …). */
export class PaymentError extends WishpayError {}
/** 429: too many requests; the SDK already retried after Retry-After. */
export class RateLimitError extends WishpayError {}
/** 5xx: the server failed or is unavailable; the SDK already retried what was safe to retry. */
export class ApiError extends WishpayError {}

/** No answer: the network failed or the attempt timed out, after the retries that were safe. */
export class ConnectionError extends WishpayError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, { type: 'connection_error', code: 'connection_failed' }, options)
  }
}

/** A webhook whose signature, timestamp or body does not check out. */
export class WebhookVerificationError extends WishpayError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, { type: 'webhook_verification_error', code: 'signature_invalid' }, options)
  }
}

const BY_TYPE: Record<string, typeof WishpayError> = {
  invalid_request_error: InvalidRequestError,
  authentication_error: AuthenticationError,
  permission_error: PermissionError,
  conflict_error: ConflictError,
  idempotency_error: IdempotencyError,
  payment_error: PaymentError,
  rate_limit_error: RateLimitError,
  api_error: ApiError,
}

function isEnvelope(body: unknown): body is { error: Envelope } {
  const error = (body as { error?: Partial<Envelope> } | null)?.error
  return typeof error === 'object' && error !== null && typeof error.type === 'string' && typeof error.code === 'string'
}

/** The error for a non-2xx answer whose body openapi-fetch parsed (JSON when it was JSON). */
export function errorFromResponse(response: Response, body: unknown): WishpayError {
  const headers = response.headers
  const requestId = headers.get('request-id') ?? undefined
  if (!isEnvelope(body)) {
    // Not the envelope (a proxy's page, an empty body): classify by status alone.
    const Class = response.status >= 500 ? ApiError : response.status === 429 ? RateLimitError : WishpayError
    const message = `Wishpay answered ${response.status} without an error envelope`
    return new Class(message, { status: response.status, type: 'api_error', code: `http_${response.status}`, request_id: requestId, headers })
  }
  const e = body.error
  const Class = BY_TYPE[e.type] ?? WishpayError
  return new Class(e.message, {
    status: response.status,
    type: e.type,
    code: e.code,
    param: e.param,
    // A replayed error keeps the first request's id in its body; the header is this attempt's.
    request_id: e.request_id ?? requestId,
    errors: e.errors,
    headers,
  })
}
