/** The refusals of the AP2 open Payment Mandate verifier (open-mandate.ts, constraints.ts). */

/** Every refusal of the verifier. mandate_malformed is a 400; the others are 422 payment_error. */
export const OPEN_MANDATE_REFUSAL_CODES = [
  'mandate_malformed', 'issuer_untrusted', 'mandate_signature_invalid', 'disclosure_invalid',
  'mandate_type_unsupported', 'mandate_not_yet_valid', 'mandate_expired', 'cnf_invalid',
  'constraint_unsupported', 'constraint_invalid', 'mandate_unbounded',
] as const
export type OpenMandateRefusalCode = (typeof OPEN_MANDATE_REFUSAL_CODES)[number]

export class OpenMandateRefusal extends Error {
  override name = 'OpenMandateRefusal'
  constructor(readonly code: OpenMandateRefusalCode, message: string, readonly param?: string) {
    super(message)
  }
}

export const refuse = (code: OpenMandateRefusalCode, message: string, param?: string): never => {
  throw new OpenMandateRefusal(code, message, param)
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
