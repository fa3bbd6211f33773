import { Type, type Static, type TSchema } from '@sinclair/typebox'

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

export const DEFAULT_PAGE = { limit: 10, offset: 0 } as const
/**
 * The largest offset a list takes: 10^9 fits a 32-bit signed integer, so no driver or dialect
 * (SQLite, PostgreSQL int4 or int8) can overflow on it, and is far past any page a client reads.
 */
export const MAX_OFFSET = 1_000_000_000

/**
 * The list rules of contract section 1, shared by every list route. Query-string integers must be
 * plain decimal digits (`offset=1e3`, `limit=+5`, `limit=1.0` are refused): src/http/text-guard.ts.
 */
export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: DEFAULT_PAGE.limit, description: 'Items per page, 1..100 in plain digits (default 10)' })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: DEFAULT_PAGE.offset, description: 'Items to skip, 0..1000000000 in plain digits (default 0)' })),
}

/** The page a list request asked for, defaults applied. */
export function pageOf(query: { limit?: number | undefined, offset?: number | undefined }): { limit: number, offset: number } {
  return { limit: query.limit ?? DEFAULT_PAGE.limit, offset: query.offset ?? DEFAULT_PAGE.offset }
}

export const ListMeta = Type.Object({
  total: Type.Integer({ description: 'Count of all items matching the filter' }),
  limit: Type.Integer(),
  offset: Type.Integer(),
}, { additionalProperties: false })

export const FieldErrorSchema = Type.Object({
  param: Type.String(),
  code: Type.String(),
  message: Type.String(),
})

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
  examples: [{
    error: {
      type: 'invalid_request_error',
      code: 'parameter_invalid',
      message: 'budget.max must be >= 0',
      param: 'budget.max',
      errors: [{ param: 'budget.max', code: 'parameter_invalid', message: 'budget.max must be >= 0' }],
      request_id: 'req_01jf3v7k8m2n4p6q8r0s2t4v6w',
    },
  }],
})

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request: parameter_missing, parameter_invalid, parameter_unknown or invalid_json',
  401: 'Missing (authentication_required) or invalid (invalid_api_key) API key',
  403: 'The key may not do this (insufficient_scope)',
  404: 'No such object in your account (resource_missing)',
  409: 'Conflict: invalid_state_transition, or idempotency_key_in_use (retry after Retry-After seconds)',
  422: 'Refused: idempotency_key_reused (idempotency_error), or a mandate or payment rule (payment_error)',
  413: 'Request body over 1 MiB (payload_too_large)',
  415: 'Content-Type is not application/json (unsupported_media_type)',
  429: 'Too many requests with this key (rate_limited); retry after Retry-After seconds',
  500: 'Internal error (internal_error)',
  503: 'Database unavailable (service_unavailable); retry after Retry-After seconds',
}

/** The error responses a route can give, all in the one envelope. */
export function errorResponses(...statuses: number[]) {
  const out: Record<number, TSchema> = {}
  for (const status of [...statuses, 500, 503]) {
    out[status] = Type.Ref(ErrorResponse.$id!, { description: ERROR_DESCRIPTIONS[status] })
  }
  return out
}

/** Error statuses every authenticated route may answer, plus the route's own. */
export const readErrors = (...extra: number[]) => errorResponses(400, 401, 429, ...extra)
export const writeErrors = (...extra: number[]) => errorResponses(400, 401, 403, 413, 415, 429, ...extra)
