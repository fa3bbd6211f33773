import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { type AppError, errors, type ErrorType } from '../lib/errors.js'
import { DEFAULT_PAGE, MAX_LIMIT, MAX_OFFSET } from '../lib/paging.js'
import { CLOSED_MANDATE_REFUSAL_CODES } from '../modules/ap2/closed-mandate.js'
import { OPEN_MANDATE_REFUSAL_CODES } from '../modules/ap2/open-mandate.js'

/** A string enum as a plain JSON Schema `enum` (clear validation messages, clean OpenAPI). */
export function StringEnum<const T extends readonly string[]>(values: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options })
}

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

/** An ISO 4217 code in any case; upper-cased during validation. */
export const CurrencyCode = (options: Record<string, unknown> = {}) =>
  Type.String({ format: 'currency', 'x-normalize': 'uppercase', examples: ['USD'], ...options })

export const Timestamp = Type.String({
  format: 'date-time',
  description: 'ISO 8601 UTC timestamp with milliseconds',
  examples: ['2026-11-22T10:00:00.000Z'],
})

/** Metadata: <= 50 keys, keys 1..40 characters, string values <= 500 characters (as Stripe's). */
const MetadataValue = Type.String({ maxLength: 500 })
export const Metadata = Type.Record(Type.String(), MetadataValue, {
  maxProperties: 50,
  propertyNames: { minLength: 1, maxLength: 40 },
  description: 'Your own key-value pairs: up to 50 keys of at most 40 characters, string values of at most 500 characters.',
  examples: [{ order_ref: 'A-1001' }],
})
/** On update a key set to null is removed. */
export const MetadataPatch = Type.Record(Type.String(), Nullable(MetadataValue), {
  maxProperties: 50,
  propertyNames: { minLength: 1, maxLength: 40 },
  description: 'Merged into the stored metadata; a key set to null is removed.',
})
export type MetadataValue = Static<typeof MetadataValue>

/** Accepted in the body of every POST; the Idempotency-Key header is the other way to send it. */
export const IdempotencyKeyField = Type.Optional(Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: '^[\\x20-\\x7E]+$',
  description: 'Makes the request safe to retry: 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Same as the Idempotency-Key header.',
}))

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) }, { additionalProperties: false })

/**
 * The list rules of contract section 1, shared by every list route, and the cursors of issue 16
 * (src/lib/paging.ts). Query-string integers must be plain decimal digits (`offset=1e3`, `limit=+5`,
 * `limit=1.0` are refused): src/http/text-guard.ts.
 */
export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_PAGE.limit, description: 'Items per page, 1..100 in plain digits (default 10)' })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: DEFAULT_PAGE.offset, description: 'Items to skip, 0..1000000000 in plain digits (default 0). Not with a cursor (400 parameter_invalid): a cursor page starts at its cursor' })),
  starting_after: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 255,
    description: 'Cursor: the id of an object of this list (usually the last of the page you have); answers the objects that follow it, older ones, newest first, as fast at any depth. '
      + 'Not with ending_before or an offset (400 parameter_invalid); an id that is not an object of this list (an id of another account included) is 400 resource_missing. '
      + 'Filters apply as usual; the cursor object need not match them',
  })),
  ending_before: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 255,
    description: 'Cursor: the id of an object of this list (usually the first of the page you have); answers the objects just before it, newer ones, still newest first, to page backwards. '
      + 'Same rules as starting_after',
  })),
}

export const ListMeta = Type.Object({
  total: Type.Integer({ description: 'Count of all items matching the filter' }),
  limit: Type.Integer({ description: 'The page size applied' }),
  offset: Type.Integer({ description: 'The offset applied (0 with a cursor)' }),
  has_more: Type.Boolean({
    description: 'Whether more items follow in the direction of travel: after this page for offsets and starting_after '
      + '(send starting_after=<last id> for them), before it for ending_before (send ending_before=<first id>)',
  }),
}, { additionalProperties: false })

/** The codes a field error (`error.errors[]`) can carry: src/http/validation.ts and FieldErrors. */
export const FIELD_ERROR_CODES = ['parameter_missing', 'parameter_invalid', 'parameter_unknown'] as const

export const FieldErrorSchema = Type.Object({
  param: Type.String({ description: 'The parameter, dotted for nested members (budget.max)' }),
  code: StringEnum(FIELD_ERROR_CODES),
  message: Type.String(),
})

/** The envelope of every error (contract section 2); each status narrows `type` and `code` (Error400...). */
export const ErrorResponse = Type.Object({
  error: Type.Object({
    type: Type.String({ description: 'Error category, e.g. invalid_request_error' }),
    code: Type.String({ description: 'Machine-readable code, e.g. parameter_invalid' }),
    message: Type.String({ description: 'Human-readable explanation' }),
    param: Type.Optional(Type.String({ description: 'The parameter at fault, when there is one' })),
    errors: Type.Optional(Type.Array(FieldErrorSchema, { description: 'Every failed parameter, on validation errors' })),
    request_id: Type.String({ description: 'The Request-Id of this request' }),
  }),
}, {
  $id: 'Error',
  title: 'Error',
  description: 'The one error envelope. Each status has its own schema (Error400, Error401, ...) listing the type and codes it can carry.',
  examples: [exampleOf(errors.invalidApiKey())],
})

/** Codes of 422 `payment_error`: mandate and payment rules (contract section 6). */
export const PAYMENT_ERROR_CODES = [
  // POST /payments, checked in this order (src/modules/mandates/rules.ts)
  'mandate_not_found', 'mandate_revoked', 'mandate_expired', 'mandate_not_yet_valid', 'mandate_consumed',
  'currency_mismatch', 'amount_exceeds_mandate', 'mandate_budget_exceeded',
  // ...then, on a mandate made from an AP2 open mandate: its least amount, uses and recurrence window
  // (param: the constraint), and the closed mandate it needs
  'constraint_unsatisfied', 'ap2_mandate_required',
  // POST /payments with an ACP vault_token
  'vault_token_not_found', 'vault_token_merchant_mismatch', 'vault_token_session_mismatch',
  // POST /mandates with a wish_id
  'wish_not_usable', 'protocol_mismatch', 'wish_budget_exceeded',
  // POST /mandates with an agent_id, PUT /wishes/{id} with an agent_id
  'agent_not_usable',
  // POST /payments/{id}/refunds
  'payment_not_refundable', 'refund_exceeds_payment',
] as const

/**
 * Codes of 422 `payment_error` for AP2 mandates refused by src/modules/ap2/open-mandate.ts and
 * closed-mandate.ts, or by the payment path (mandate_replayed, nonce_invalid); mandate_malformed is a 400.
 * The list and what each means: docs/decisions.md, "AP2 open mandates".
 */
export const AP2_MANDATE_ERROR_CODES = [...new Set([...OPEN_MANDATE_REFUSAL_CODES, ...CLOSED_MANDATE_REFUSAL_CODES])].filter((code) => code !== 'mandate_malformed')

interface ErrorStatus {
  /** What the status means here, the start of the response's description. */
  summary: string
  types: readonly ErrorType[]
  codes: readonly string[]
  /** One realistic answer, made by the factory that makes the real ones. */
  example: AppError
}

/**
 * Every error status the API answers with, the types and codes each can carry, and one example. The
 * per-status schemas (Error400, ...) and every route's error responses are made from this table;
 * test/api/error-catalogue.test.ts checks it against src/lib/errors.ts and the services.
 */
export const ERROR_STATUSES: Record<number, ErrorStatus> = {
  400: {
    summary: 'Invalid request',
    types: ['invalid_request_error'],
    codes: [
      'parameter_missing', 'parameter_invalid', 'parameter_unknown', 'invalid_json', 'idempotency_key_mismatch',
      'resource_limit_exceeded', 'invalid_url', 'bad_request', 'mandate_malformed',
      // A list's starting_after / ending_before that names no object of the list (lib/paging.ts).
      'resource_missing',
      // POST /payments/{id}/settle on a server whose processor is not the sandbox.
      'sandbox_only',
    ],
    example: errors.validation([{ param: 'amount', code: 'parameter_missing', message: 'amount is required' }]),
  },
  401: {
    summary: 'No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate',
    types: ['authentication_error'],
    codes: ['authentication_required', 'invalid_api_key'],
    example: errors.authenticationRequired(),
  },
  403: {
    summary: 'A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do',
    types: ['permission_error'],
    codes: ['insufficient_scope'],
    example: errors.insufficientScope(),
  },
  404: {
    summary: 'No such object in your account',
    types: ['invalid_request_error'],
    codes: ['resource_missing'],
    example: errors.resourceMissing('mandate', 'mdt_01jf3v7k8m2n4p6q8r0s2t4v6w'),
  },
  408: {
    summary: 'The request was not received in time (answered on the connection, before any route)',
    types: ['invalid_request_error'],
    codes: ['request_timeout'],
    example: errors.requestTimeout(),
  },
  409: {
    summary: 'Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key\'s kid is taken (kid_in_use)',
    types: ['conflict_error'],
    codes: ['invalid_state_transition', 'idempotency_key_in_use', 'kid_in_use'],
    example: errors.idempotencyKeyInUse(),
  },
  413: {
    summary: 'Request body over 1 MiB',
    types: ['invalid_request_error'],
    codes: ['payload_too_large'],
    example: errors.payloadTooLarge(1024 * 1024),
  },
  414: {
    summary: 'A path segment is longer than any id',
    types: ['invalid_request_error'],
    codes: ['uri_too_long'],
    example: errors.uriTooLong(1024),
  },
  415: {
    summary: 'A body that is not application/json',
    types: ['invalid_request_error'],
    codes: ['unsupported_media_type'],
    example: errors.unsupportedMediaType('text/plain'),
  },
  417: {
    summary: 'An Expect header other than 100-continue (answered on the connection, before any route)',
    types: ['invalid_request_error'],
    codes: ['expectation_failed'],
    example: errors.expectationFailed(),
  },
  422: {
    summary: 'Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error)',
    types: ['idempotency_error', 'payment_error'],
    codes: [...new Set(['idempotency_key_reused', ...PAYMENT_ERROR_CODES, ...AP2_MANDATE_ERROR_CODES])],
    example: errors.payment('mandate_budget_exceeded', 'amount exceeds what is left of the mandate\'s budget (1000)', 'amount'),
  },
  429: {
    summary: 'Too many requests with this key; retry after Retry-After seconds',
    types: ['rate_limit_error'],
    codes: ['rate_limited'],
    example: errors.rateLimited(1),
  },
  431: {
    summary: 'Request line and headers too large (answered on the connection, before any route)',
    types: ['invalid_request_error'],
    codes: ['request_header_fields_too_large'],
    example: errors.requestHeaderFieldsTooLarge(16 * 1024),
  },
  500: {
    summary: 'Internal error; nothing about it is disclosed',
    types: ['api_error'],
    codes: ['internal_error'],
    example: errors.internal(),
  },
  503: {
    summary: 'The database is unreachable or the server is shutting down; retry after Retry-After seconds',
    types: ['api_error'],
    codes: ['service_unavailable'],
    example: errors.serviceUnavailable(),
  },
}

/** The answer an AppError gets, as an example (the envelope of src/http/error-handler.ts). */
function exampleOf(error: AppError) {
  return {
    error: {
      type: error.type,
      code: error.code,
      message: error.message,
      ...(error.param !== undefined ? { param: error.param } : {}),
      ...(error.errors !== undefined ? { errors: error.errors } : {}),
      request_id: 'req_01jf3v7k8m2n4p6q8r0s2t4v6w',
    },
  }
}

const errorSchemaId = (status: number) => `Error${status}`

/** The Error envelope narrowed to the types and codes of one status; registered as a shared schema. */
function errorSchemaOf(status: number, entry: ErrorStatus) {
  return Type.Intersect([
    Type.Ref(ErrorResponse.$id!),
    // Open objects: this member only narrows two members of the envelope, which defines the rest.
    Type.Object({
      error: Type.Object({
        type: StringEnum(entry.types),
        code: StringEnum(entry.codes),
      }, { additionalProperties: true }),
    }, { additionalProperties: true }),
  ], {
    $id: errorSchemaId(status),
    title: errorSchemaId(status),
    description: `${status}: ${entry.summary}.`,
    examples: [exampleOf(entry.example)],
  })
}

/** The per-status error schemas; registered with the app before any route (src/http/openapi.ts). */
export const ERROR_SCHEMAS: TSchema[] = Object.entries(ERROR_STATUSES).map(([status, entry]) => errorSchemaOf(Number(status), entry))

/** The response description of an error status: its meaning and every code. */
export function errorDescription(status: number): string {
  const entry = ERROR_STATUSES[status]
  if (!entry) throw new Error(`no error status ${status} in ERROR_STATUSES`)
  return `${entry.summary}. Codes: ${entry.codes.join(', ')}.`
}

/** One error response of a route: the envelope narrowed to this status. */
export const errorResponse = (status: number) => Type.Ref(errorSchemaId(status), { description: errorDescription(status) })

/**
 * The error responses a route can give, in the one envelope. Statuses every request can get (400,
 * 408, 417, 431, 500, 503), 414 on routes with a path parameter, and those of the idempotency plugin
 * are added to every route by src/http/openapi.ts; routes list their own.
 */
export function errorResponses(...statuses: number[]) {
  const out: Record<number, TSchema> = {}
  for (const status of statuses) out[status] = errorResponse(status)
  return out
}

/** Error statuses every authenticated route may answer (403: an agent key outside its routes), plus the route's own. */
export const readErrors = (...extra: number[]) => errorResponses(400, 401, 403, 429, ...extra)
export const writeErrors = (...extra: number[]) => errorResponses(400, 401, 403, 413, 415, 429, ...extra)

/**
 * A member the validator fills in when it is absent (`default`): optional on the wire, so the
 * OpenAPI document does not list it as required, and always present in the handler's type, since
 * validation (useDefaults) put it there.
 */
export function Defaulted<T extends TSchema>(schema: T): T {
  if (!('default' in schema)) throw new Error('Defaulted() needs a schema with a default')
  return Type.Optional(schema) as unknown as T
}
