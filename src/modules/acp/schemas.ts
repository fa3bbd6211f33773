import { Type, type Static } from '@sinclair/typebox'
import { StringEnum } from '../../http/schemas.js'

/**
 * ACP Delegate Payment, version 2026-04-17: the request, the response and the flat Error object,
 * mirroring `spec/2026-04-17/json-schema/schema.delegate_payment.json` of
 * agentic-commerce-protocol/agentic-commerce-protocol (copied to shared/protocols/acp-2026-04-17/)
 * member for member: the same types, enums, formats, length limits and patterns, the same
 * `required` lists and `additionalProperties: false` on every object. test/unit/acp-schemas.test.ts
 * proves that ajv judges every official example and a set of mutated bodies the same way with these
 * schemas as with the official one.
 *
 * Where the RFC's prose (rfcs/rfc.delegate_payment.md) is stricter than the schema, the schema is
 * followed, so that a body the official schema accepts is never refused here:
 * - §3.3 marks `payment_method.virtual` REQUIRED; the schema does not require it (and its own
 *   examples omit it).
 * - §7 says "At least one `risk_signal` item"; the 2026-04-17 changelog removed `minItems: 1`
 *   ("Allow empty risk_signals array").
 * - §7's `exp_month` "01"–"12" and `exp_year` "four digits" are not in the schema (only maxLength);
 *   they are semantic checks for the service (invalid_card), not schema rules.
 * No `$id`s, so the route may register or inline them as it likes.
 */

export const ACP_API_VERSION = '2026-04-17'
/** Every API-Version this server accepts, newest first (the order the Error's `supported_versions` asks for). */
export const SUPPORTED_ACP_VERSIONS: readonly string[] = Object.freeze([ACP_API_VERSION])

/** `metadata` everywhere in the schema: an object whose every value is a string. */
const StringMap = (description: string) => Type.Record(Type.String(), Type.String({ description: 'Metadata value' }), { description })

export const CARD_NUMBER_TYPES = ['fpan', 'network_token'] as const
export const CARD_CHECKS = ['avs', 'cvv', 'ani', 'auth0'] as const
export const CARD_FUNDING_TYPES = ['credit', 'debit', 'prepaid'] as const
export const ALLOWANCE_REASONS = ['one_time'] as const
export const RISK_SIGNAL_TYPES = ['card_testing'] as const
export const RISK_SIGNAL_ACTIONS = ['blocked', 'manual_review', 'authorized'] as const
export const ACP_ERROR_TYPES = ['invalid_request', 'rate_limit_exceeded', 'processing_error', 'service_unavailable'] as const
export const ACP_ERROR_CODES = [
  'invalid_card', 'duplicate_request', 'idempotency_conflict', 'too_many_requests', 'idempotency_key_required', 'idempotency_in_flight',
] as const

export const AcpAddressSchema = Type.Object({
  name: Type.String({ maxLength: 256, description: 'Full name of the person at this address' }),
  line_one: Type.String({ maxLength: 60, description: 'Street address line 1 (e.g., street and number)' }),
  line_two: Type.Optional(Type.String({ maxLength: 60, description: 'Street address line 2 (e.g., apartment, suite, unit)' })),
  city: Type.String({ maxLength: 60, description: 'City or locality' }),
  state: Type.String({ description: 'State, province, or region' }),
  country: Type.String({ minLength: 2, maxLength: 2, description: 'ISO-3166-1 alpha-2 country code' }),
  postal_code: Type.String({ maxLength: 20, description: 'ZIP or postal code' }),
}, { additionalProperties: false, title: 'AcpAddress', description: 'Physical address for billing or shipping purposes' })

export const AcpPaymentMethodCardSchema = Type.Object({
  type: Type.Literal('card', { description: "Payment method type, always 'card'" }),
  card_number_type: StringEnum(CARD_NUMBER_TYPES, {
    description: 'Whether the number is a raw card number (fpan) or a network token',
  }),
  number: Type.String({ description: 'network token or fallback fpan value' }),
  exp_month: Type.Optional(Type.String({ maxLength: 2, description: 'Two-digit expiration month (01-12)' })),
  exp_year: Type.Optional(Type.String({ maxLength: 4, description: 'Four-digit expiration year (e.g., 2026)' })),
  name: Type.Optional(Type.String({ description: 'Cardholder name as it appears on the card' })),
  cvc: Type.Optional(Type.String({ maxLength: 4, description: 'Card verification code (3 or 4 digits)' })),
  cryptogram: Type.Optional(Type.String({ description: 'Dynamic cryptogram for tokenized card transactions' })),
  eci_value: Type.Optional(Type.String({ maxLength: 2, description: 'Electronic Commerce Indicator for 3DS authentication status' })),
  checks_performed: Type.Optional(Type.Array(StringEnum(CARD_CHECKS), {
    description: 'List of verification checks performed on the card',
  })),
  iin: Type.Optional(Type.String({ maxLength: 8, description: 'Issuer Identification Number (first 6 digits of card)' })),
  display_card_funding_type: StringEnum(CARD_FUNDING_TYPES, { description: 'Card funding type for display purposes' }),
  display_wallet_type: Type.Optional(Type.String({ description: 'Digital wallet provider if card is from a wallet (e.g., Apple Pay, Google Pay)' })),
  display_brand: Type.Optional(Type.String({ description: 'Card brand for display purposes (e.g., visa, mastercard)' })),
  display_last4: Type.Optional(Type.String({
    minLength: 4, maxLength: 4, pattern: '^[0-9]{4}$', description: 'Last 4 digits of card number for display purposes',
  })),
  metadata: StringMap('Additional metadata about the payment method'),
  virtual: Type.Optional(Type.Boolean({ description: 'Whether this is a virtual card number' })),
}, {
  additionalProperties: false,
  title: 'AcpPaymentMethodCard',
  description: 'Card payment method details including card number, expiration, and verification data',
})

export const AcpAllowanceSchema = Type.Object({
  reason: StringEnum(ALLOWANCE_REASONS, {
    description: 'Usage pattern for this allowance; currently only one_time is supported',
  }),
  max_amount: Type.Integer({ description: 'Maximum charge amount in minor units (e.g. 100 cents for $1.00 or 100 for ¥100)' }),
  currency: Type.String({ pattern: '^[a-z]{3}$', description: 'ISO-4217 three-letter lowercase currency code (e.g., usd)' }),
  checkout_session_id: Type.String({ description: 'Identifier of the checkout session this payment is for' }),
  merchant_id: Type.String({ maxLength: 256, description: 'Unique identifier for the merchant authorized to use this token' }),
  expires_at: Type.String({ format: 'date-time', description: 'ISO 8601 timestamp when this allowance expires' }),
}, {
  additionalProperties: false,
  title: 'AcpAllowance',
  description: 'Constraints on how the delegated payment method can be used (amount limit, expiration, merchant)',
})

export const AcpRiskSignalSchema = Type.Object({
  type: StringEnum(RISK_SIGNAL_TYPES, { description: 'Type of risk signal detected' }),
  score: Type.Integer({ description: 'Risk score indicating severity level' }),
  action: StringEnum(RISK_SIGNAL_ACTIONS, { description: 'Recommended action based on risk assessment' }),
}, { additionalProperties: false, title: 'AcpRiskSignal', description: 'Fraud detection signal indicating detected risk patterns and recommended actions' })

export const DelegatePaymentRequestSchema = Type.Object({
  payment_method: AcpPaymentMethodCardSchema,
  allowance: AcpAllowanceSchema,
  billing_address: Type.Optional(AcpAddressSchema),
  risk_signals: Type.Array(AcpRiskSignalSchema, { description: 'List of risk assessment signals from fraud detection' }),
  metadata: StringMap('Additional metadata for the request'),
}, {
  additionalProperties: false,
  title: 'DelegatePaymentRequest',
  description: 'Request to tokenize a payment method for delegated use by a merchant',
})

export const DelegatePaymentResponseSchema = Type.Object({
  id: Type.String({ description: 'Unique vault token identifier (vt_...)' }),
  created: Type.String({ format: 'date-time', description: 'ISO 8601 timestamp when the token was created' }),
  metadata: StringMap('Metadata echoed from the request plus system-added fields'),
}, {
  additionalProperties: false,
  title: 'DelegatePaymentResponse',
  description: 'Response containing the vault token identifier for the delegated payment method',
})

/**
 * The official `Error`, exactly (its closed `type` and `code` enums included). Some answers the
 * OpenAPI document and the RFC name fall outside these enums (401 `unauthorized`, 500
 * `internal_server_error`, `unsupported_api_version`; upstream issue #161): see
 * AcpErrorResponseSchema for the body Wishpay actually sends.
 */
export const AcpErrorSchema = Type.Object({
  type: StringEnum(ACP_ERROR_TYPES, { description: 'High-level error category' }),
  code: StringEnum(ACP_ERROR_CODES, { description: 'Specific error code for programmatic handling' }),
  message: Type.String({ description: 'Human-readable error message' }),
  param: Type.Optional(Type.String({ description: 'JSONPath of offending field' })),
  supported_versions: Type.Optional(Type.Array(Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'API version in YYYY-MM-DD format' }), {
    description: 'List of API versions supported by the server, ordered by preference (newest first). Only included in version-related errors.',
  })),
}, { additionalProperties: false, title: 'AcpError', description: 'Error response for delegate payment API requests' })

/**
 * The flat error body as sent (response serialization and OpenAPI): the official Error's members
 * with open `type` and `code` strings, because the spec's own 401/429/500/503 examples and the
 * RFC's version codes are not in the official enums.
 */
export const AcpErrorResponseSchema = Type.Object({
  type: Type.String({ description: 'High-level error category', examples: [...ACP_ERROR_TYPES] }),
  code: Type.String({ description: 'Specific error code for programmatic handling', examples: [...ACP_ERROR_CODES] }),
  message: Type.String({ description: 'Human-readable error message' }),
  param: Type.Optional(Type.String({ description: 'RFC 9535 JSONPath of the offending field, e.g. $.payment_method.number' })),
  supported_versions: Type.Optional(Type.Array(Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' }), {
    description: 'API versions supported by the server, newest first. Only in version-related errors.',
  })),
}, { additionalProperties: false, title: 'AcpErrorResponse', description: 'ACP flat error object (no envelope)' })

export type AcpAddress = Static<typeof AcpAddressSchema>
export type AcpPaymentMethodCard = Static<typeof AcpPaymentMethodCardSchema>
export type AcpAllowance = Static<typeof AcpAllowanceSchema>
export type AcpRiskSignal = Static<typeof AcpRiskSignalSchema>
export type DelegatePaymentRequest = Static<typeof DelegatePaymentRequestSchema>
export type DelegatePaymentResponse = Static<typeof DelegatePaymentResponseSchema>
export type AcpErrorBody = Static<typeof AcpErrorResponseSchema>
export type AcpErrorType = (typeof ACP_ERROR_TYPES)[number]
export type AcpErrorCode = (typeof ACP_ERROR_CODES)[number]
