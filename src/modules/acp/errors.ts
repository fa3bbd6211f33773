import type { ErrorObject } from 'ajv'
import { SUPPORTED_ACP_VERSIONS, type AcpErrorBody } from './schemas.js'

/**
 * ACP's flat error objects (rfcs/rfc.delegate_payment.md §2.6: "Errors MUST be returned as flat JSON
 * objects (no envelope) with fields: type, code, message, optional param"). These are not Wishpay's
 * AppError envelope: the ACP route renders `toBody()` as the whole response body.
 *
 * Where each type/code/status comes from (ACP 2026-04-17):
 * - idempotency (RFC §5.4 table: "All idempotency errors use type: invalid_request"):
 *   400 idempotency_key_required, 422 idempotency_conflict, 409 idempotency_in_flight ("Servers
 *   SHOULD include a Retry-After header"), messages as the RFC's examples.
 * - invalid_card: RFC §4.2/§8.2 and the OpenAPI 400 and 422 examples; 400 for a body the schema
 *   refuses ("400/422 invalid request/semantic validation"), 422 for a semantic refusal
 *   (OpenAPI: "422: Semantic validation error", example "Invalid card expiration month").
 * - API version (RFC §2.1): "SHOULD return HTTP 400 Bad Request with a supported_versions array
 *   ... MAY use unsupported_api_version or missing_api_version as well-known code values".
 * - 401: the OpenAPI example `{ type: unauthorized, code: unauthorized, message: Unauthorized }`.
 * - 429: examples.delegate_payment.json `{ type: rate_limit_exceeded, code: too_many_requests }`
 *   (the one that conforms to the schema; the OpenAPI example uses code rate_limit_exceeded).
 * - 500/503: RFC §4.2 "type ∈ ... processing_error, service_unavailable"; the code enum has no 5xx
 *   value, so code = type (as the OpenAPI 503 example does; its 500 example says
 *   internal_server_error, a type the schema does not have).
 * Not in the official Error enums (upstream issue #161), sent anyway because the spec names them:
 * type `unauthorized`, codes `unauthorized`, `unsupported_api_version`, `missing_api_version`,
 * `processing_error`, `service_unavailable`, `invalid_request`, and the signature codes below.
 */

export interface AcpErrorInit {
  status: number
  type: string
  code: string
  message: string
  param?: string | undefined
  supportedVersions?: readonly string[] | undefined
  headers?: Record<string, string> | undefined
}

export class AcpError extends Error {
  override name = 'AcpError'
  readonly status: number
  readonly type: string
  readonly code: string
  readonly param: string | undefined
  readonly supportedVersions: readonly string[] | undefined
  readonly headers: Record<string, string>

  constructor(init: AcpErrorInit) {
    super(init.message)
    this.status = init.status
    this.type = init.type
    this.code = init.code
    this.param = init.param
    this.supportedVersions = init.supportedVersions
    this.headers = init.headers ?? {}
  }

  /** The flat body: type, code, message, then param and supported_versions when set. */
  toBody(): AcpErrorBody {
    const body: AcpErrorBody = { type: this.type, code: this.code, message: this.message }
    if (this.param !== undefined) body.param = this.param
    if (this.supportedVersions !== undefined) body.supported_versions = [...this.supportedVersions]
    return body
  }

  toJSON(): AcpErrorBody {
    return this.toBody()
  }
}

/** Codes of refused request signatures (Wishpay's own: the spec names none). */
export const ACP_SIGNATURE_CODES = ['missing_signature', 'missing_timestamp', 'invalid_timestamp', 'timestamp_out_of_window', 'invalid_signature'] as const
export type AcpSignatureCode = (typeof ACP_SIGNATURE_CODES)[number]

const retryAfter = (seconds: number | undefined): Record<string, string> | undefined =>
  seconds === undefined ? undefined : { 'Retry-After': String(Math.max(0, Math.ceil(seconds))) }

export const acpErrors = {
  /** A member is missing or malformed (400) or a card is refused on its meaning (422). */
  invalidCard: (message: string, param?: string, status: 400 | 422 = 400) =>
    new AcpError({ status, type: 'invalid_request', code: 'invalid_card', message, param }),
  /** Any other invalid_request; `code` is free (the official enum has no code for non-card members). */
  invalidRequest: (code: string, message: string, param?: string, status: 400 | 422 = 400) =>
    new AcpError({ status, type: 'invalid_request', code, message, param }),
  idempotencyKeyRequired: () =>
    new AcpError({ status: 400, type: 'invalid_request', code: 'idempotency_key_required', message: 'Idempotency-Key header is required' }),
  idempotencyConflict: () => new AcpError({
    status: 422, type: 'invalid_request', code: 'idempotency_conflict',
    message: 'Idempotency-Key has already been used with a different request body',
  }),
  idempotencyInFlight: (retryAfterSeconds = 1) => new AcpError({
    status: 409, type: 'invalid_request', code: 'idempotency_in_flight',
    message: 'A request with this Idempotency-Key is currently being processed',
    headers: retryAfter(retryAfterSeconds),
  }),
  unauthorized: (message = 'Unauthorized') =>
    new AcpError({ status: 401, type: 'unauthorized', code: 'unauthorized', message, headers: { 'WWW-Authenticate': 'Bearer' } }),
  missingApiVersion: (supported: readonly string[] = SUPPORTED_ACP_VERSIONS) => new AcpError({
    status: 400, type: 'invalid_request', code: 'missing_api_version',
    message: 'API-Version header is required', supportedVersions: supported,
  }),
  unsupportedApiVersion: (requested: string, supported: readonly string[] = SUPPORTED_ACP_VERSIONS) => new AcpError({
    status: 400, type: 'invalid_request', code: 'unsupported_api_version',
    // The changelog's example: "API version '2025-01-01' is not supported". The value is cut, as it is the caller's.
    message: `API version '${requested.slice(0, 40)}' is not supported`, supportedVersions: supported,
  }),
  rateLimited: (retryAfterSeconds?: number) => new AcpError({
    status: 429, type: 'rate_limit_exceeded', code: 'too_many_requests',
    message: 'Too many requests, please retry later', headers: retryAfter(retryAfterSeconds),
  }),
  processingError: (message = 'Internal server error') =>
    new AcpError({ status: 500, type: 'processing_error', code: 'processing_error', message }),
  serviceUnavailable: (retryAfterSeconds?: number, message = 'Service unavailable') => new AcpError({
    status: 503, type: 'service_unavailable', code: 'service_unavailable', message, headers: retryAfter(retryAfterSeconds),
  }),
  /** A refused request signature (signature.ts): 401, as a failed identity check. */
  signature: (code: AcpSignatureCode, message: string) =>
    new AcpError({ status: 401, type: 'unauthorized', code, message }),
}

// ---------------------------------------------------------------------------------------------
// Validation errors -> one AcpError

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/

function memberSegment(name: string): string {
  // RFC 9535: dot shorthand for plain names, else a bracketed single-quoted name.
  return IDENTIFIER.test(name) ? `.${name}` : `['${name.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}']`
}

/**
 * An ajv instancePath ("/risk_signals/0/type") as an RFC 9535 JSONPath in the spec's own notation
 * ("$.risk_signals[0].type"). A digit-only segment is an index when the value there is an array;
 * without `data` it is taken for an index.
 */
export function jsonPointerToJsonPath(pointer: string, data?: unknown): string {
  let path = '$'
  let node: unknown = data
  const known = data !== undefined
  if (pointer === '') return path
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    const isIndex = /^(0|[1-9][0-9]*)$/.test(segment) && (!known || Array.isArray(node))
    path += isIndex ? `[${segment}]` : memberSegment(segment)
    node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[segment] : undefined
  }
  return path
}

function describe(error: ErrorObject, param: string): string {
  const p = error.params as Record<string, unknown>
  const subject = param === '$' ? 'Request body' : param.slice(2)
  switch (error.keyword) {
    case 'required':
      return `${subject} is required`
    case 'additionalProperties':
      return `${subject} is not a known member`
    case 'type':
      return `${subject} must be ${p.type === 'integer' ? 'an integer' : `of type ${String(p.type)}`}`
    case 'enum':
      return `${subject} must be one of: ${(p.allowedValues as unknown[]).join(', ')}`
    case 'const':
      return `${subject} must be ${JSON.stringify(p.allowedValue)}`
    case 'maxLength':
      return `${subject} must be at most ${String(p.limit)} characters`
    case 'minLength':
      return `${subject} must be at least ${String(p.limit)} characters`
    case 'pattern':
      return `${subject} does not have the expected format`
    case 'format':
      return `${subject} must be a valid ${String(p.format)}`
    default:
      // ajv's own message names the rule, never the value (verbose is off), so no card data leaks.
      return `${subject} ${error.message ?? 'is invalid'}`
  }
}

/** Where an error points: the member itself for required/additionalProperties, else the instance. */
function errorParam(error: ErrorObject, data: unknown): string {
  const p = error.params as Record<string, unknown>
  const base = jsonPointerToJsonPath(error.instancePath, data)
  if (error.keyword === 'required' && typeof p.missingProperty === 'string') return base + memberSegment(p.missingProperty)
  if (error.keyword === 'additionalProperties' && typeof p.additionalProperty === 'string') return base + memberSegment(p.additionalProperty)
  return base
}

/**
 * ajv's errors for a DelegatePaymentRequest as ONE AcpError (400, type invalid_request), for the
 * first error ajv reports (ajv reports in schema order, so this is deterministic). `param` is an
 * RFC 9535 JSONPath with the `$` root, as RFC §4.2 asks ("param SHOULD be an RFC 9535 JSONPath") and
 * as the schema's own Error example writes it ("$.payment_method.exp_year"); the bare dotted paths
 * of some other examples ("payment_method.number") are not JSONPath. A problem under
 * `$.payment_method` is `invalid_card`; anywhere else `invalid_request` (the official code enum has
 * nothing for allowance, address, risk signals or metadata; see the open question in the report).
 * `data` (the body validated) only tells indices from digit-only member names.
 */
export function acpErrorFromValidation(errors: readonly ErrorObject[] | null | undefined, data?: unknown): AcpError {
  const first = errors?.[0]
  if (!first) return acpErrors.invalidRequest('invalid_request', 'Request body is invalid')
  const param = errorParam(first, data)
  const message = describe(first, param)
  const onCard = param === '$.payment_method' || param.startsWith('$.payment_method.') || param.startsWith('$.payment_method[')
  const where = param === '$' ? undefined : param
  return onCard ? acpErrors.invalidCard(message, where) : acpErrors.invalidRequest('invalid_request', message, where)
}
