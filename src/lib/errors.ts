/**
 * The one error taxonomy (contract section 2). Services throw AppErrors built by the factories
 * below; the error handler renders them. Nothing else decides a status, type or code.
 */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'conflict_error'
  | 'idempotency_error'
  | 'payment_error'
  | 'rate_limit_error'
  | 'api_error'

export interface FieldError {
  param: string
  code: string
  message: string
}

export interface AppErrorInit {
  status: number
  type: ErrorType
  code: string
  message: string
  param?: string | undefined
  errors?: FieldError[] | undefined
  headers?: Record<string, string> | undefined
}

export class AppError extends Error {
  override name = 'AppError'
  readonly status: number
  readonly type: ErrorType
  readonly code: string
  readonly param: string | undefined
  readonly errors: FieldError[] | undefined
  readonly headers: Record<string, string>

  constructor(init: AppErrorInit) {
    super(init.message)
    this.status = init.status
    this.type = init.type
    this.code = init.code
    this.param = init.param
    this.errors = init.errors
    this.headers = init.headers ?? {}
  }
}

/**
 * Gathers the field errors found beyond the schema (checks that need another field, the clock or
 * the database), so that one answer lists every failed parameter.
 */
export class FieldErrors {
  private readonly list: FieldError[] = []
  invalid(param: string, message: string): void {
    this.list.push({ param, code: 'parameter_invalid', message })
  }
  /** A member the schema leaves optional that this request needs (its need depends on another member). */
  missing(param: string, message: string): void {
    this.list.push({ param, code: 'parameter_missing', message })
  }
  throwIfAny(): void {
    if (this.list.length > 0) throw errors.validation(this.list)
  }
}

const invalid = (code: string, message: string, param?: string, errors?: FieldError[]) =>
  new AppError({ status: 400, type: 'invalid_request_error', code, message, param, errors })

/** The id prefix of each kind of object (lib/ids.ts), to tell a caller who sent one kind's id for another's. */
const ID_PREFIXES: Record<string, string> = {
  wish: 'wish_', mandate: 'mdt_', payment: 'pay_', refund: 're_', event: 'evt_', 'webhook endpoint': 'we_',
  agent: 'agt_', 'trusted key': 'tk_', 'vault token': 'vt_', 'API key': 'key_', account: 'acct_',
}

/** "`wish_…` is a wish id; this route takes a mandate id (`mdt_…`)", when the id is plainly another kind's. */
function wrongPrefixHint(resource: string, id: string): string {
  const expected = ID_PREFIXES[resource]
  const kind = Object.keys(ID_PREFIXES).find((name) => name !== resource && id.startsWith(ID_PREFIXES[name]!))
  if (expected === undefined || kind === undefined || id.startsWith(expected)) return ''
  return `. \`${ID_PREFIXES[kind]}…\` is ${/^[aeiou]/i.test(kind) ? 'an' : 'a'} ${kind} id; this route takes ${/^[aeiou]/i.test(resource) ? 'an' : 'a'} ${resource} id (\`${expected}…\`)`
}

export const errors = {
  validation: (fieldErrors: FieldError[]) => {
    const first = fieldErrors[0]!
    const params = new Set(fieldErrors.map((e) => e.param))
    return invalid(first.code, first.message, params.size === 1 ? first.param : undefined, fieldErrors)
  },
  parameterInvalid: (param: string, message: string) =>
    invalid('parameter_invalid', message, param, [{ param, code: 'parameter_invalid', message }]),
  invalidJson: (message = 'Request body is not valid JSON') => invalid('invalid_json', message),
  badRequest: (message: string) => invalid('parameter_invalid', message),
  /** The account already has as many of these objects as it may; the message says how to free one. */
  resourceLimitExceeded: (message: string) => invalid('resource_limit_exceeded', message),

  authenticationRequired: () => new AppError({
    status: 401,
    type: 'authentication_error',
    code: 'authentication_required',
    message: 'Authentication required: send your API key as "Authorization: Bearer <key>"',
    headers: { 'WWW-Authenticate': 'Bearer realm="wishpay"' },
  }),
  invalidApiKey: () => new AppError({
    status: 401,
    type: 'authentication_error',
    code: 'invalid_api_key',
    message: 'The API key is invalid or has been revoked',
    headers: { 'WWW-Authenticate': 'Bearer realm="wishpay", error="invalid_token"' },
  }),
  insufficientScope: (scope: string = 'read') => new AppError({
    status: 403,
    type: 'permission_error',
    code: 'insufficient_scope',
    message: scope === 'agent'
      ? 'An agent key (ak_) may only create payments on the mandates granted to its agent and read its own payments and mandates'
      : 'This API key is read-only (rk_); use a secret key (sk_) to make changes',
  }),
  resourceMissing: (resource: string, id: string, param = 'id') => new AppError({
    status: 404,
    type: 'invalid_request_error',
    code: 'resource_missing',
    message: `No such ${resource}: '${id}'${wrongPrefixHint(resource, id)}`,
    param,
  }),
  /**
   * A list's `starting_after` / `ending_before` names no object of that list (unknown, of another kind,
   * or another account's): 400 with Stripe's code, since the URL itself names nothing missing.
   */
  cursorMissing: (resource: string, id: string, param: string) =>
    invalid('resource_missing', `No such ${resource}: '${id}'${wrongPrefixHint(resource, id) || ` (${param} takes the id of ${/^[aeiou]/i.test(resource) ? 'an' : 'a'} ${resource} of this list)`}`, param),
  /** GET /payments/{id}/receipt of a payment not made with an AP2 closed mandate: it has no receipt. */
  receiptMissing: (paymentId: string) => new AppError({
    status: 404,
    type: 'invalid_request_error',
    code: 'resource_missing',
    message: `Payment '${paymentId}' was not made with an AP2 mandate: only AP2 payments have a receipt`,
    param: 'id',
  }),
  routeNotFound: (method: string, url: string) => new AppError({
    status: 404,
    type: 'invalid_request_error',
    code: 'route_not_found',
    message: `Unrecognized request URL (${method}: ${url})`,
  }),
  idempotencyKeyMissing: () =>
    invalid('parameter_missing', 'idempotency_key is required: send it in the body or as the Idempotency-Key header', 'idempotency_key',
      [{ param: 'idempotency_key', code: 'parameter_missing', message: 'idempotency_key is required' }]),
  idempotencyKeyMismatch: () =>
    invalid('idempotency_key_mismatch', 'The Idempotency-Key header and the idempotency_key body member differ', 'idempotency_key'),
  idempotencyKeyInUse: (retryAfterSeconds = 1) => new AppError({
    status: 409,
    type: 'conflict_error',
    code: 'idempotency_key_in_use',
    message: 'A request with this idempotency key is still being processed; retry after Retry-After seconds',
    param: 'idempotency_key',
    headers: { 'Retry-After': String(retryAfterSeconds) },
  }),
  idempotencyKeyReused: () => new AppError({
    status: 422,
    type: 'idempotency_error',
    code: 'idempotency_key_reused',
    message: 'This idempotency key was already used with a different request; use a new key for a new request',
    param: 'idempotency_key',
  }),
  /** A mandate or payment rule refused the operation (contract section 6). */
  payment: (code: string, message: string, param?: string) => new AppError({
    status: 422, type: 'payment_error', code, message, param,
  }),
  /** POST /payments/{id}/settle on a server whose processor is not the sandbox: real payments settle on their own. */
  sandboxOnly: () => invalid('sandbox_only', 'Only payments of the sandbox processor can be settled on request; this server\'s processor settles its payments itself'),
  invalidStateTransition: (message: string, param?: string) => new AppError({
    status: 409, type: 'conflict_error', code: 'invalid_state_transition', message, param,
  }),
  /** POST /trusted_keys: the account already has a key (active or revoked) with this kid. */
  kidInUse: (kid: string) => new AppError({
    status: 409,
    type: 'conflict_error',
    code: 'kid_in_use',
    message: `A trusted key with kid '${kid}' already exists in this account (revoked keys keep their kid): give the new key another kid`,
    param: 'public_jwk.kid',
  }),
  /**
   * An AP2 mandate refused by src/modules/ap2 (codes: OPEN_MANDATE_REFUSAL_CODES): a token that is
   * not an SD-JWT at all is a 400 mandate_malformed, every other refusal a 422 payment_error.
   */
  ap2MandateRefused: (code: string, message: string, param?: string) => code === 'mandate_malformed'
    ? invalid(code, message, param)
    : new AppError({ status: 422, type: 'payment_error', code, message, param }),
  payloadTooLarge: (limitBytes: number) => new AppError({
    status: 413,
    type: 'invalid_request_error',
    code: 'payload_too_large',
    message: `Request body is larger than ${limitBytes} bytes`,
  }),
  /** The path is not valid percent-encoding (`/wishes/%zz`): nothing can be routed. */
  invalidUrl: () => invalid('invalid_url', 'The request URL is not valid: a % must be followed by two hexadecimal digits'),
  /** A path segment longer than any route accepts (http/client-errors.ts MAX_PARAM_LENGTH). */
  uriTooLong: (limit: number) => new AppError({
    status: 414,
    type: 'invalid_request_error',
    code: 'uri_too_long',
    message: `The request URL has a path segment longer than ${limit} characters`,
  }),
  /** Answered on the socket by http/client-errors.ts: the request never reached a route. */
  requestHeaderFieldsTooLarge: (limitBytes: number) => new AppError({
    status: 431,
    type: 'invalid_request_error',
    code: 'request_header_fields_too_large',
    message: `The request line and headers together are larger than ${limitBytes} bytes`,
  }),
  /** Not parseable as HTTP/1.1 (unknown method, bad Transfer-Encoding, bad header characters...). */
  malformedRequest: (reason: string) => invalid('bad_request', `The request is not valid HTTP/1.1: ${reason}`),
  /** An `Expect` header other than `100-continue` (RFC 9110 section 10.1.1). */
  expectationFailed: () => new AppError({
    status: 417,
    type: 'invalid_request_error',
    code: 'expectation_failed',
    message: 'The only expectation supported is Expect: 100-continue',
  }),
  requestTimeout: () => new AppError({
    status: 408,
    type: 'invalid_request_error',
    code: 'request_timeout',
    message: 'The request was not received in time',
  }),
  unsupportedMediaType: (contentType: string | undefined) => new AppError({
    status: 415,
    type: 'invalid_request_error',
    code: 'unsupported_media_type',
    message: `Content-Type must be application/json${contentType ? ` (got ${contentType})` : ''}`,
  }),
  rateLimited: (retryAfterSeconds: number) => new AppError({
    status: 429,
    type: 'rate_limit_error',
    code: 'rate_limited',
    message: `Too many requests with this API key; retry after ${retryAfterSeconds} s`,
    headers: { 'Retry-After': String(retryAfterSeconds) },
  }),
  /** Too many failed authentications from the client's address (http/auth.ts). */
  authFailuresLimited: (retryAfterSeconds: number) => new AppError({
    status: 429,
    type: 'rate_limit_error',
    code: 'rate_limited',
    message: `Too many failed authentications from this address; check your API key, and retry after ${retryAfterSeconds} s`,
    headers: { 'Retry-After': String(retryAfterSeconds) },
  }),
  internal: () => new AppError({
    status: 500, type: 'api_error', code: 'internal_error', message: 'An internal error occurred; it has been logged',
  }),
  serviceUnavailable: (retryAfterSeconds = 1) => new AppError({
    status: 503,
    type: 'api_error',
    code: 'service_unavailable',
    message: 'The service is temporarily unavailable; retry later',
    headers: { 'Retry-After': String(retryAfterSeconds) },
  }),
}
