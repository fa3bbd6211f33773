/** The refusals of the AP2 Payment Mandate verifiers (open-mandate.ts, constraints.ts, closed-mandate.ts). */

/** Every refusal of the open mandate verifier. mandate_malformed is a 400; the others are 422 payment_error. */
export const OPEN_MANDATE_REFUSAL_CODES = [
  'mandate_malformed', 'issuer_untrusted', 'mandate_signature_invalid', 'disclosure_invalid',
  'mandate_type_unsupported', 'mandate_not_yet_valid', 'mandate_expired', 'cnf_invalid',
  'constraint_unsupported', 'constraint_invalid', 'mandate_unbounded',
] as const
export type OpenMandateRefusalCode = (typeof OPEN_MANDATE_REFUSAL_CODES)[number]

/**
 * Every refusal of a closed mandate: the verifier's (closed-mandate.ts), and mandate_replayed and
 * nonce_invalid, which the payment path decides against the database. mandate_malformed is a 400.
 */
export const CLOSED_MANDATE_REFUSAL_CODES = [
  'mandate_malformed', 'mandate_signature_invalid', 'disclosure_invalid', 'mandate_type_unsupported',
  'mandate_chain_invalid', 'audience_invalid', 'mandate_not_yet_valid', 'mandate_expired',
  'payment_amount_mismatch', 'constraint_unsatisfied', 'mandate_replayed', 'nonce_invalid',
] as const
export type ClosedMandateRefusalCode = (typeof CLOSED_MANDATE_REFUSAL_CODES)[number]

export type MandateRefusalCode = OpenMandateRefusalCode | ClosedMandateRefusalCode

/** A refused AP2 mandate, open or closed (one class, so callers map both the same way). */
export class OpenMandateRefusal extends Error {
  override name = 'OpenMandateRefusal'
  constructor(readonly code: MandateRefusalCode, message: string, readonly param?: string) {
    super(message)
  }
}

export const refuse = (code: MandateRefusalCode, message: string, param?: string): never => {
  throw new OpenMandateRefusal(code, message, param)
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The same class under a name that fits closed mandates too. */
export { OpenMandateRefusal as MandateRefusal }
