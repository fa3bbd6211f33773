import type { JWK } from 'jose'
import { normalizeCurrency } from '../../lib/currency.js'
import type { Merchant, PaymentInstrument } from './constraints.js'
import {
  allowedAlgorithms, checkTimes, decodeHeader, disclose, epoch, findMandate, sha256Base64Url, splitToken, verifyJws,
} from './open-mandate.js'
import { isObject, refuse } from './refusal.js'

export type { Merchant, PaymentInstrument } from './constraints.js'
export {
  CLOSED_MANDATE_REFUSAL_CODES, type ClosedMandateRefusalCode, MandateRefusal, type MandateRefusalCode, OpenMandateRefusal,
} from './refusal.js'

/**
 * AP2 v0.2 closed Payment Mandates (`vct` `mandate.payment.1`), verified against the open mandate they
 * close. Pure: no database, no clock of its own (the caller passes `now`), no HTTP. Replay (the
 * replay_key, the nonce) is the caller's to decide against the database.
 *
 * The token is a compact SD-JWT as AP2's payment_mandate.md shows it: a key-binding JWT (typ
 * kb+sd-jwt) signed with the open mandate's cnf key, whose payload carries `delegate_payload:
 * [{ "...": digest }]`, iat, aud, nonce and sd_hash (the hash of the open mandate as presented),
 * followed by its disclosures (`kbjwt~d1~…~dn~`). It may come alone or chained after the open
 * mandate (`open~` `~` `closed`).
 *
 * Checks, in this order (each refusal is a MandateRefusal with a named code):
 * 1. shape: a compact SD-JWT ending with "~", no empty disclosure but the one chain separator
 *                                                                         → mandate_malformed (400)
 * 2. header typ kb+sd-jwt                                               → mandate_malformed (typ)
 *    alg fitting the cnf key (ES256 for P-256, EdDSA or Ed25519 for Ed25519)
 *                                                                         → mandate_signature_invalid (alg)
 * 3. the signature (jose, with the cnf key only)                        → mandate_signature_invalid
 * 4. disclosures, as for open mandates but with nothing withheld inside the mandate
 *                                                                         → disclosure_invalid
 * 5. exactly one disclosed mandate with `vct` `mandate.payment.1`       → mandate_type_unsupported
 *    (more than one                                                      → mandate_malformed, as for open mandates)
 * 6. sd_hash is the open mandate's presentation hash, and a chained open part hashes to it
 *                                                                         → mandate_chain_invalid (sd_hash)
 * 7. aud is (or, as an array, holds) the expected audience             → audience_invalid (aud)
 * 8. nonce a non-empty string                                           → mandate_malformed (nonce)
 * 9. iat present; iat/nbf not in the future beyond leeway               → mandate_not_yet_valid
 *    iat not older than maxAgeSeconds, exp not passed                   → mandate_expired
 * 10. transaction_id, payee, payment_amount (integer minor units, ISO 4217), payment_instrument
 *                                                                         → mandate_malformed (param: the member)
 * 11. payment_amount is the request's                                   → payment_amount_mismatch (currency, amount)
 * 12. payee among allowed_payees (by id), instrument among allowed_payment_instruments (by id and type)
 *                                                                         → constraint_unsatisfied
 */

export const CLOSED_MANDATE_VCT = 'mandate.payment.1'

/** What the closed mandate is checked against: the verified open mandate it closes. */
export interface OpenMandateBinding {
  /** The sd_hash the closed mandate must carry (VerifiedOpenMandate.presentation_hash). */
  presentation_hash: string
  /** The key that must have signed it (EC P-256 or Ed25519). */
  cnf_jwk: JWK
  /** null: not constrained; [] allows none (constraints.ts). */
  allowed_payees: Merchant[] | null
  allowed_payment_instruments: PaymentInstrument[] | null
}

export interface VerifyClosedOptions {
  /** The closed mandate alone (kbjwt~disclosures~), or the chain open~~closed. */
  token: string
  open: OpenMandateBinding
  /** The aud it must carry (exact match; an array aud holding it is fine too). */
  audience: string
  /** The injected clock's now. */
  now: Date
  /** The request's payment: integer minor units, upper-case ISO 4217. */
  payment: { amount: number, currency: string }
  /** Leeway for an iat ahead of our clock, in seconds (default 60). */
  iatLeewaySeconds?: number
  /** How old an iat may be, in seconds (default 600). */
  maxAgeSeconds?: number
}

export interface VerifiedClosedMandate {
  /** The closed mandate content as disclosed. */
  mandate: Record<string, unknown>
  nonce: string
  /** base64url sha-256 of the signed KB JWT alone: the same however the disclosures are ordered. */
  replay_key: string
  /** base64url sha-256 of the closed mandate as presented (kbjwt~disclosures~, no open part): a receipt's reference. */
  reference: string
  transaction_id: string
  payee: Merchant
  payment_instrument: PaymentInstrument
  issued_at: string
}

const WHAT = 'closed mandate'

/** Splits off a chained open part (open~ then ~ then closed); the closed part alone otherwise. */
function splitChain(token: string): { open: string | null, closed: string } {
  if (typeof token !== 'string') return refuse('mandate_malformed', `The ${WHAT} must be a compact SD-JWT string`)
  const at = token.indexOf('~~')
  if (at < 0) return { open: null, closed: token }
  const closed = token.slice(at + 2)
  // One chain separator only: a second "~~" is an empty disclosure of the closed part, refused by splitToken.
  return { open: token.slice(0, at + 1), closed }
}

function checkHeader(header: Record<string, unknown>, cnf: JWK): string {
  if (header.typ !== 'kb+sd-jwt') return refuse('mandate_malformed', `The ${WHAT} must be a key-binding JWT (typ 'kb+sd-jwt'), not '${String(header.typ)}'`, 'typ')
  // The cnf key is EC P-256 or Ed25519 (checkCnf); an RSA key would sign no closed mandate.
  const allowed = allowedAlgorithms(cnf).filter((a) => a.startsWith('ES') || a === 'EdDSA' || a === 'Ed25519')
  const alg = header.alg
  if (typeof alg !== 'string' || !allowed.includes(alg)) {
    return refuse('mandate_signature_invalid', `alg '${String(alg)}' does not fit the open mandate's cnf key (${allowed.join(', ') || 'none'})`, 'alg')
  }
  return alg
}

function checkChain(claims: Record<string, unknown>, open: string | null, presentationHash: string): void {
  if (claims.sd_hash !== presentationHash) {
    refuse('mandate_chain_invalid', 'sd_hash is not the hash of the open mandate this payment is made under', 'sd_hash')
  }
  if (open !== null && sha256Base64Url(open) !== presentationHash) {
    refuse('mandate_chain_invalid', 'The chained open mandate is not the one this payment is made under', 'sd_hash')
  }
}

function checkAudience(aud: unknown, audience: string): void {
  const ok = typeof aud === 'string' ? aud === audience : Array.isArray(aud) && aud.includes(audience)
  if (!ok) refuse('audience_invalid', `The ${WHAT} is not addressed to '${audience}'`, 'aud')
}

function checkAge(claims: Record<string, unknown>, now: Date, maxAge: number): number {
  const iat = epoch(claims.iat, 'iat')
  if (iat === undefined) return refuse('mandate_malformed', `The ${WHAT} must carry iat`, 'iat')
  if (iat < Math.floor(now.getTime() / 1000) - maxAge) refuse('mandate_expired', `The ${WHAT} was signed more than ${maxAge} s ago (iat ${iat})`, 'iat')
  return iat
}

const text = (value: unknown): value is string => typeof value === 'string' && value.length > 0

/** The members Wishpay needs, each as AP2's payment_mandate.json requires it. */
function readContent(mandate: Record<string, unknown>) {
  const { transaction_id: transactionId, payee, payment_amount: amount, payment_instrument: instrument } = mandate
  if (!text(transactionId)) return refuse('mandate_malformed', 'transaction_id must be a non-empty string', 'transaction_id')
  if (!isObject(payee) || !text(payee.id) || !text(payee.name)) return refuse('mandate_malformed', 'payee must be a merchant with id and name', 'payee')
  if (!isObject(amount)) return refuse('mandate_malformed', 'payment_amount must be an object of amount and currency', 'payment_amount')
  if (typeof amount.amount !== 'number' || !Number.isSafeInteger(amount.amount) || amount.amount < 0) {
    return refuse('mandate_malformed', 'payment_amount.amount must be a non-negative integer in minor units', 'payment_amount.amount')
  }
  const currency = amount.currency
  if (typeof currency !== 'string' || currency.length !== 3 || normalizeCurrency(currency) !== currency) {
    return refuse('mandate_malformed', 'payment_amount.currency must be an upper-case ISO 4217 code', 'payment_amount.currency')
  }
  if (!isObject(instrument) || !text(instrument.id) || !text(instrument.type)) {
    return refuse('mandate_malformed', 'payment_instrument must have id and type', 'payment_instrument')
  }
  return {
    transactionId,
    payee: payee as unknown as Merchant,
    amount: { amount: amount.amount, currency },
    instrument: instrument as unknown as PaymentInstrument,
  }
}

function checkAgainstOpen(
  content: ReturnType<typeof readContent>, payment: VerifyClosedOptions['payment'], open: OpenMandateBinding,
): void {
  if (content.amount.currency !== payment.currency) {
    refuse('payment_amount_mismatch', `The mandate is for ${content.amount.currency}, the payment for ${payment.currency}`, 'currency')
  }
  if (content.amount.amount !== payment.amount) {
    refuse('payment_amount_mismatch', `The mandate is for ${content.amount.amount} minor units, the payment for ${payment.amount}`, 'amount')
  }
  const payees = open.allowed_payees
  if (payees !== null && !payees.some((p) => p.id === content.payee.id)) {
    refuse('constraint_unsatisfied', `The payee '${content.payee.id}' is not allowed by the open mandate`, 'payment.allowed_payees')
  }
  const instruments = open.allowed_payment_instruments
  if (instruments !== null && !instruments.some((i) => i.id === content.instrument.id && i.type === content.instrument.type)) {
    refuse('constraint_unsatisfied', `The payment instrument '${content.instrument.id}' is not allowed by the open mandate`, 'payment.allowed_payment_instruments')
  }
}

/**
 * Verifies a closed Payment Mandate against the open mandate it closes and the request's payment.
 * Throws MandateRefusal (never anything else for a bad token).
 */
export async function verifyClosedPaymentMandate(options: VerifyClosedOptions): Promise<VerifiedClosedMandate> {
  const { open, now } = options
  const { open: openPart, closed } = splitChain(options.token)
  const { jwt } = splitToken(closed, WHAT)
  const alg = checkHeader(decodeHeader(jwt), open.cnf_jwk)
  const payload = await verifyJws(jwt, open.cnf_jwk, alg, `The ${WHAT} is not signed by the open mandate's cnf key`)
  // Nothing may be withheld inside a closed mandate: it has no allowed lists.
  const claims = await disclose(closed, payload, CLOSED_MANDATE_VCT, null)
  const mandate = findMandate(claims, CLOSED_MANDATE_VCT, 'a closed Payment Mandate')
  checkChain(claims, openPart, open.presentation_hash)
  checkAudience(claims.aud, options.audience)
  if (!text(claims.nonce)) refuse('mandate_malformed', `The ${WHAT} must carry a nonce`, 'nonce')
  const iat = checkAge(claims, now, options.maxAgeSeconds ?? 600)
  checkTimes(claims, mandate, now, options.iatLeewaySeconds ?? 60)
  const content = readContent(mandate)
  checkAgainstOpen(content, options.payment, open)
  return {
    mandate,
    nonce: claims.nonce as string,
    replay_key: sha256Base64Url(jwt),
    reference: sha256Base64Url(closed),
    transaction_id: content.transactionId,
    payee: content.payee,
    payment_instrument: content.instrument,
    issued_at: new Date(iat * 1000).toISOString(),
  }
}
