import { digest } from '@sd-jwt/crypto-nodejs'
import { decodeSdJwt, type DecodedSDJwt, unpack } from '@sd-jwt/decode'
import { compactVerify, importJWK, type JWK } from 'jose'
import { normalizeCurrency } from '../../lib/currency.js'

/**
 * AP2 v0.2 open Payment Mandates (`vct` `mandate.payment.open.1`), verified and turned into a Wishpay
 * mandate draft. Pure: no database, no clock of its own (the caller passes `now`), no HTTP.
 *
 * The token is a compact SD-JWT as AP2's payment_mandate.md shows it: an issuer-signed JWT whose
 * payload carries `delegate_payload: [{ "...": digest }]` and `_sd_alg`, followed by its disclosures
 * and an empty key-binding part (`jwt~d1~…~dn~`). One disclosure is the mandate content; the members
 * of its `allowed` lists may be disclosures of their own.
 *
 * Checks, in this order (each refusal is an OpenMandateRefusal with a named code):
 * 1. shape: a compact SD-JWT without a key-binding JWT                  → mandate_malformed (400)
 * 2. issuer: the header's `kid` names an active trusted key of the account, and `alg` fits that key
 *                                                                         → issuer_untrusted
 * 3. the issuer signature (jose, against that key only)                 → mandate_signature_invalid
 * 4. disclosures: `_sd_alg` sha-256, each one decodable, unique and referenced by a signed digest
 *                                                                         → disclosure_invalid
 * 5. exactly one disclosed mandate with `vct` `mandate.payment.open.1`  → mandate_type_unsupported
 * 6. `iat` not in the future (60 s leeway), `exp` not passed (top level and mandate, the earliest)
 *                                                                         → mandate_not_yet_valid, mandate_expired
 * 7. `cnf.jwk` an EC P-256 or Ed25519 public key                        → cnf_invalid
 * 8. each constraint: a known type (AP2 says an unknown one MUST fail)  → constraint_unsupported (param: the type)
 *    and well formed (integer minor units, AP2 #339; known currency; ordered range and dates)
 *                                                                         → constraint_invalid (param: the type)
 * 9. the result bounds spending and time: a cap and an end            → mandate_unbounded
 */

export const OPEN_MANDATE_VCT = 'mandate.payment.open.1'

/** Every refusal of this module. mandate_malformed is a 400; the others are 422 payment_error. */
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

const refuse = (code: OpenMandateRefusalCode, message: string, param?: string): never => {
  throw new OpenMandateRefusal(code, message, param)
}

export type TrustedKeyRole = 'trusted_agent_provider' | 'user_credential_issuer'

/** What the verifier needs of a trusted key (src/modules/trusted-keys). */
export interface IssuerKey {
  id: string
  kid: string
  role: TrustedKeyRole
  status: 'active' | 'revoked'
  public_jwk: JWK
}

export interface Merchant { id: string, name: string, website?: string }
export interface PaymentInstrument { id: string, type: string, description?: string }

export const RECURRENCE_FREQUENCIES = ['ON_DEMAND', 'DAILY', 'WEEKLY', 'BIWEEKLY', 'MONTHLY', 'QUARTERLY', 'ANNUALLY'] as const
export type RecurrenceFrequency = (typeof RECURRENCE_FREQUENCIES)[number]

/** The least time between two payments under a frequency, as an ISO 8601 duration; null: none (ON_DEMAND). */
export const FREQUENCY_WINDOW: Record<RecurrenceFrequency, string | null> = {
  ON_DEMAND: null, DAILY: 'P1D', WEEKLY: 'P7D', BIWEEKLY: 'P14D', MONTHLY: 'P1M', QUARTERLY: 'P3M', ANNUALLY: 'P1Y',
}

/** A Wishpay mandate as an open Payment Mandate describes it; amounts in integer minor units. */
export interface OpenMandateDraft {
  protocol: 'ap2'
  currency: string
  /** Per-payment cap (payment.amount_range.max; payment.budget.max when there is no range). */
  max_amount: number
  /** Least amount per payment (payment.amount_range.min), null when none. */
  min_amount: number | null
  /** Cap on the sum of payments (payment.budget.max; max_amount when there is no budget). */
  budget_amount: number
  /** payment.agent_recurrence.max_occurrences; null: no cap on the count. */
  max_uses: number | null
  /** payment.agent_recurrence; null when absent (then any number of payments within budget). */
  recurrence: { frequency: RecurrenceFrequency, max_occurrences: number | null, window: string | null } | null
  /** single_use when at most one payment may be made (max_occurrences 1), else multi_use. */
  usage: 'single_use' | 'multi_use'
  /** payment.execution_date.not_before (ISO 8601 UTC), null when none. */
  not_before: string | null
  /** The earliest of the token's `exp` and payment.execution_date.not_after (ISO 8601 UTC). */
  expires_at: string
  /** payment.allowed_payees, null when not constrained. */
  allowed_payees: Merchant[] | null
  /** payment.allowed_payment_instruments, null when not constrained. */
  allowed_payment_instruments: PaymentInstrument[] | null
  /** payment.reference.conditional_transaction_id (digest of the open Checkout Mandate), null when none. */
  payment_reference: string | null
  /** The public key that must sign the closed Payment Mandates (cnf.jwk). */
  cnf_jwk: JWK
}

export interface VerifiedOpenMandate {
  draft: OpenMandateDraft
  /** The mandate content as disclosed (for audit and schema checks). */
  mandate: Record<string, unknown>
  /** The trusted key that signed it. */
  issuer: { trusted_key_id: string, kid: string, role: TrustedKeyRole }
  /** base64url sha-256 of the token as presented: the `sd_hash` a closed mandate chained to it carries. */
  presentation_hash: string
  /** base64url sha-256 of the issuer-signed JWT alone: the same whatever disclosures a later presentation holds. */
  issuer_jwt_hash: string
  issued_at: string | null
}

export interface VerifyOptions {
  token: string
  /** The account's trusted keys (revoked ones may be included: they are refused by name). */
  trustedKeys: readonly IssuerKey[]
  /** The injected clock's now. */
  now: Date
  /** Leeway for an `iat` ahead of our clock, in seconds (default 60). */
  iatLeewaySeconds?: number
}

/** base64url sha-256, the hash of `sd_hash`, `_sd` digests and AP2 references. */
export function sha256Base64Url(text: string): string {
  return Buffer.from(digest(text, 'sha-256')).toString('base64url')
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The JWS algorithms each key type may sign with here. */
function algorithmsFor(jwk: JWK): string[] {
  if (jwk.kty === 'EC' && jwk.crv === 'P-256') return ['ES256']
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') return ['EdDSA', 'Ed25519']
  if (jwk.kty === 'RSA') return ['RS256', 'PS256']
  return []
}

function splitToken(token: string): { jwt: string } {
  if (typeof token !== 'string' || token.length === 0) refuse('mandate_malformed', 'The open mandate must be a compact SD-JWT string')
  const parts = token.split('~')
  if (parts.length < 2) refuse('mandate_malformed', 'The open mandate must be a compact SD-JWT (issuer JWT~disclosures~)')
  if (parts[parts.length - 1] !== '') {
    refuse('mandate_malformed', 'An open mandate is presented without a key-binding JWT: the token must end with "~"')
  }
  if (parts.slice(1, -1).some((p) => p === '')) refuse('mandate_malformed', 'An empty disclosure: a chain of mandates (open~~closed) is not an open mandate')
  const jwt = parts[0]!
  if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(jwt)) refuse('mandate_malformed', 'The issuer-signed part is not a compact JWS')
  return { jwt }
}

function decodeHeader(jwt: string): Record<string, unknown> {
  try {
    const header = JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString('utf8')) as unknown
    if (isObject(header)) return header
  } catch {
    // refused below
  }
  return refuse('mandate_malformed', 'The issuer JWT header is not a base64url JSON object')
}

/** The `kid` of a token's issuer JWT header, to look the one trusted key up; undefined when there is none to read. */
export function issuerKidOf(token: string): string | undefined {
  try {
    const kid = decodeHeader(splitToken(token).jwt).kid
    return typeof kid === 'string' && kid.length > 0 ? kid : undefined
  } catch {
    return undefined
  }
}

function chooseKey(header: Record<string, unknown>, keys: readonly IssuerKey[]): IssuerKey {
  const kid = header.kid
  if (typeof kid !== 'string' || kid.length === 0) return refuse('issuer_untrusted', 'The issuer JWT header has no kid, so no trusted key can be chosen', 'kid')
  const key = keys.find((k) => k.kid === kid)
  if (!key) return refuse('issuer_untrusted', `No trusted key of this account has kid '${kid}'`, 'kid')
  if (key.status !== 'active') return refuse('issuer_untrusted', `The trusted key with kid '${kid}' (${key.id}) is revoked`, 'kid')
  const alg = header.alg
  if (typeof alg !== 'string' || !algorithmsFor(key.public_jwk).includes(alg)) {
    return refuse('issuer_untrusted', `alg '${String(alg)}' does not fit the trusted key '${kid}' (${algorithmsFor(key.public_jwk).join(', ')})`, 'alg')
  }
  return key
}

async function verifySignature(jwt: string, key: IssuerKey, alg: string): Promise<Record<string, unknown>> {
  let payload: Uint8Array
  try {
    const publicKey = await importJWK(key.public_jwk, alg)
    payload = (await compactVerify(jwt, publicKey, { algorithms: [alg] })).payload
  } catch {
    return refuse('mandate_signature_invalid', `The issuer signature does not verify with the trusted key '${key.kid}'`)
  }
  try {
    const parsed = JSON.parse(Buffer.from(payload).toString('utf8')) as unknown
    if (isObject(parsed)) return parsed
  } catch {
    // refused below
  }
  return refuse('mandate_malformed', 'The issuer JWT payload is not a JSON object')
}

/** Every signed digest (`_sd` members and `{"...": d}` array elements), anywhere in a value. */
function collectDigests(value: unknown, into: string[]): void {
  if (Array.isArray(value)) {
    for (const item of value) {
      if (isObject(item) && Object.keys(item).length === 1 && typeof item['...'] === 'string') into.push(item['...'])
      else collectDigests(item, into)
    }
  } else if (isObject(value)) {
    for (const [name, member] of Object.entries(value)) {
      if (name === '_sd' && Array.isArray(member)) {
        for (const d of member) if (typeof d === 'string') into.push(d)
      } else {
        collectDigests(member, into)
      }
    }
  }
}

/** Decodes the disclosures and unpacks the payload; every disclosure must be referenced once, by a signed digest or another disclosure's. */
async function disclose(token: string, payload: Record<string, unknown>): Promise<Record<string, unknown>> {
  const sdAlg = payload._sd_alg ?? 'sha-256'
  if (sdAlg !== 'sha-256') refuse('disclosure_invalid', `_sd_alg '${String(sdAlg)}' is not supported (sha-256 only)`, '_sd_alg')
  let decoded: DecodedSDJwt
  try {
    decoded = await decodeSdJwt(token, digest)
  } catch {
    return refuse('disclosure_invalid', 'A disclosure is not base64url JSON of [salt, value] or [salt, name, value]')
  }
  const digests = decoded.disclosures.map((d) => d._digest!)
  if (new Set(digests).size !== digests.length) refuse('disclosure_invalid', 'The same disclosure is presented twice')

  const referenced: string[] = []
  collectDigests(payload, referenced)
  for (const d of decoded.disclosures) collectDigests(d.value, referenced)
  if (new Set(referenced).size !== referenced.length) refuse('disclosure_invalid', 'A digest appears more than once in the mandate')
  const known = new Set(referenced)
  const stray = decoded.disclosures.findIndex((d) => !known.has(d._digest!))
  if (stray >= 0) refuse('disclosure_invalid', `Disclosure ${stray + 1} is not referenced by the signed mandate (changed or foreign)`)

  try {
    const { unpackedObj } = await unpack(payload, decoded.disclosures, digest)
    if (isObject(unpackedObj)) return unpackedObj
  } catch {
    // refused below
  }
  return refuse('disclosure_invalid', 'The disclosures do not unpack into the mandate')
}

function findMandate(claims: Record<string, unknown>): Record<string, unknown> {
  const candidates: Record<string, unknown>[] = []
  if (claims.vct === OPEN_MANDATE_VCT) candidates.push(claims)
  const delegated = claims.delegate_payload
  if (delegated !== undefined && !Array.isArray(delegated)) refuse('mandate_malformed', 'delegate_payload must be an array')
  for (const item of (delegated as unknown[] | undefined) ?? []) if (isObject(item) && item.vct === OPEN_MANDATE_VCT) candidates.push(item)
  if (candidates.length === 0) {
    return refuse('mandate_type_unsupported', `No disclosed mandate has vct '${OPEN_MANDATE_VCT}' (an open Payment Mandate)`, 'vct')
  }
  if (candidates.length > 1) return refuse('mandate_malformed', `More than one open Payment Mandate is disclosed; present one`)
  return candidates[0]!
}

const epoch = (value: unknown, name: string): number | undefined => {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isInteger(value)) return refuse('mandate_malformed', `${name} must be an integer Unix time`, name)
  return value
}

function checkTimes(claims: Record<string, unknown>, mandate: Record<string, unknown>, now: Date, leeway: number) {
  const nowSeconds = Math.floor(now.getTime() / 1000)
  const iats = [epoch(claims.iat, 'iat'), epoch(mandate.iat, 'iat')].filter((v) => v !== undefined)
  const exps = [epoch(claims.exp, 'exp'), epoch(mandate.exp, 'exp')].filter((v) => v !== undefined)
  const iat = iats.length ? Math.max(...iats) : undefined
  const exp = exps.length ? Math.min(...exps) : undefined
  if (iat !== undefined && iat > nowSeconds + leeway) refuse('mandate_not_yet_valid', `The mandate is issued in the future (iat ${iat})`, 'iat')
  if (exp !== undefined && exp <= nowSeconds) refuse('mandate_expired', `The mandate expired at ${new Date(exp * 1000).toISOString()}`, 'exp')
  return { iat, exp }
}

async function checkCnf(mandate: Record<string, unknown>): Promise<JWK> {
  const cnf = mandate.cnf
  if (!isObject(cnf) || !isObject(cnf.jwk)) return refuse('cnf_invalid', 'An open mandate must bind the agent key as cnf.jwk', 'cnf')
  const jwk = cnf.jwk as JWK
  if ('d' in jwk) return refuse('cnf_invalid', 'cnf.jwk holds a private key member (d)', 'cnf.jwk.d')
  const algs = algorithmsFor(jwk).filter((a) => a !== 'Ed25519')
  if (jwk.kty === 'RSA' || algs.length === 0) return refuse('cnf_invalid', 'cnf.jwk must be an EC P-256 or OKP Ed25519 public key', 'cnf.jwk')
  try {
    await importJWK(jwk, algs[0]!)
  } catch {
    return refuse('cnf_invalid', 'cnf.jwk is not a valid public key', 'cnf.jwk')
  }
  const { kty, crv, x, y } = jwk
  return y === undefined ? { kty, crv, x } : { kty, crv, x, y }
}

const minorAmount = (value: unknown, type: string, member: string): number => {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    return refuse('constraint_invalid', `${type}.${member} must be a non-negative integer in minor units (AP2 #339)`, type)
  }
  return value
}

const currencyOf = (value: unknown, type: string): string => {
  const code = typeof value === 'string' && value.length === 3 ? normalizeCurrency(value) : undefined
  if (code === undefined || code !== value) return refuse('constraint_invalid', `${type}.currency must be an ISO 4217 code`, type)
  return code
}

function isoTime(value: unknown, type: string, member: string): number | undefined {
  if (value === undefined) return undefined
  const at = typeof value === 'string' ? Date.parse(value) : Number.NaN
  if (Number.isNaN(at)) return refuse('constraint_invalid', `${type}.${member} must be an ISO 8601 date-time`, type)
  return at
}

function listOf<T>(value: unknown, type: string, required: readonly string[]): T[] {
  if (!Array.isArray(value)) return refuse('constraint_invalid', `${type}.allowed must be an array`, type)
  for (const item of value) {
    if (!isObject(item) || required.some((m) => typeof item[m] !== 'string')) {
      return refuse('constraint_invalid', `each of ${type}.allowed needs ${required.join(' and ')} (undisclosed entries are left out)`, type)
    }
  }
  return value as T[]
}

interface Mapped {
  currency?: string
  range?: { max: number, min: number | null }
  budget?: number
  recurrence?: OpenMandateDraft['recurrence']
  notBefore?: number
  notAfter?: number
  payees?: Merchant[]
  instruments?: PaymentInstrument[]
  reference?: string
}

function mapConstraints(mandate: Record<string, unknown>): Mapped {
  const list = mandate.constraints ?? []
  if (!Array.isArray(list)) return refuse('mandate_malformed', 'constraints must be an array', 'constraints')
  const out: Mapped = {}
  const seen = new Set<string>()
  const sameCurrency = (code: string, type: string) => {
    if (out.currency !== undefined && out.currency !== code) refuse('constraint_invalid', `${type}.currency ${code} differs from ${out.currency}`, type)
    out.currency = code
  }
  for (const c of list) {
    if (!isObject(c) || typeof c.type !== 'string') return refuse('constraint_invalid', 'Every constraint is an object with a string type', 'constraints')
    const type = c.type
    if (seen.has(type)) refuse('constraint_invalid', `${type} appears more than once`, type)
    seen.add(type)
    switch (type) {
      case 'payment.amount_range': {
        sameCurrency(currencyOf(c.currency, type), type)
        const max = minorAmount(c.max, type, 'max')
        const min = c.min === undefined ? null : minorAmount(c.min, type, 'min')
        if (max === 0) refuse('constraint_invalid', `${type}.max must be above 0`, type)
        if (min !== null && min > max) refuse('constraint_invalid', `${type}.min is above its max`, type)
        out.range = { max, min }
        break
      }
      case 'payment.budget': {
        sameCurrency(currencyOf(c.currency, type), type)
        const max = minorAmount(c.max, type, 'max')
        if (max === 0) refuse('constraint_invalid', `${type}.max must be above 0`, type)
        out.budget = max
        break
      }
      case 'payment.agent_recurrence': {
        const frequency = c.frequency
        if (typeof frequency !== 'string' || !(RECURRENCE_FREQUENCIES as readonly string[]).includes(frequency)) {
          return refuse('constraint_invalid', `${type}.frequency must be one of ${RECURRENCE_FREQUENCIES.join(', ')}`, type)
        }
        let max: number | null = null
        if (c.max_occurrences !== undefined) {
          if (typeof c.max_occurrences !== 'number' || !Number.isSafeInteger(c.max_occurrences) || c.max_occurrences < 1) {
            return refuse('constraint_invalid', `${type}.max_occurrences must be a positive integer`, type)
          }
          max = c.max_occurrences
        }
        const f = frequency as RecurrenceFrequency
        out.recurrence = { frequency: f, max_occurrences: max, window: FREQUENCY_WINDOW[f] }
        break
      }
      case 'payment.execution_date': {
        const notBefore = isoTime(c.not_before, type, 'not_before')
        const notAfter = isoTime(c.not_after, type, 'not_after')
        if (notBefore !== undefined && notAfter !== undefined && notBefore > notAfter) refuse('constraint_invalid', `${type}.not_before is after not_after`, type)
        if (notBefore !== undefined) out.notBefore = notBefore
        if (notAfter !== undefined) out.notAfter = notAfter
        break
      }
      case 'payment.allowed_payees':
        out.payees = listOf<Merchant>(c.allowed, type, ['id', 'name'])
        break
      case 'payment.allowed_payment_instruments':
        out.instruments = listOf<PaymentInstrument>(c.allowed, type, ['id', 'type'])
        break
      case 'payment.reference':
        if (typeof c.conditional_transaction_id !== 'string' || c.conditional_transaction_id.length === 0) {
          return refuse('constraint_invalid', `${type}.conditional_transaction_id must be a string`, type)
        }
        out.reference = c.conditional_transaction_id
        break
      default:
        // payment.allowed_pisps among them: Wishpay initiates no payment through a PISP, so it cannot evaluate it.
        return refuse('constraint_unsupported', `Constraint type '${type}' is not supported; AP2 requires an unknown constraint to fail`, type)
    }
  }
  return out
}

function toDraft(m: Mapped, exp: number | undefined, cnf: JWK): OpenMandateDraft {
  const cap = m.range?.max ?? m.budget
  if (cap === undefined || m.currency === undefined) {
    return refuse('mandate_unbounded', 'The mandate bounds no amount: it needs payment.amount_range or payment.budget', 'constraints')
  }
  const ends = [exp === undefined ? undefined : exp * 1000, m.notAfter].filter((v) => v !== undefined)
  if (ends.length === 0) return refuse('mandate_unbounded', 'The mandate never ends: it needs exp or payment.execution_date.not_after', 'exp')
  const budget = m.budget ?? cap
  const maxUses = m.recurrence?.max_occurrences ?? null
  return {
    protocol: 'ap2',
    currency: m.currency,
    max_amount: Math.min(cap, budget),
    min_amount: m.range?.min ?? null,
    budget_amount: budget,
    max_uses: maxUses,
    recurrence: m.recurrence ?? null,
    usage: maxUses === 1 ? 'single_use' : 'multi_use',
    not_before: m.notBefore === undefined ? null : new Date(m.notBefore).toISOString(),
    expires_at: new Date(Math.min(...ends)).toISOString(),
    allowed_payees: m.payees ?? null,
    allowed_payment_instruments: m.instruments ?? null,
    payment_reference: m.reference ?? null,
    cnf_jwk: cnf,
  }
}

/**
 * Verifies an open Payment Mandate against the account's trusted keys and maps it to a draft.
 * Throws OpenMandateRefusal (never anything else for a bad token).
 */
export async function verifyOpenPaymentMandate(options: VerifyOptions): Promise<VerifiedOpenMandate> {
  const { token, trustedKeys, now } = options
  const { jwt } = splitToken(token)
  const header = decodeHeader(jwt)
  const key = chooseKey(header, trustedKeys)
  const payload = await verifySignature(jwt, key, header.alg as string)
  const claims = await disclose(token, payload)
  const mandate = findMandate(claims)
  const { iat, exp } = checkTimes(claims, mandate, now, options.iatLeewaySeconds ?? 60)
  const cnf = await checkCnf(mandate)
  const draft = toDraft(mapConstraints(mandate), exp, cnf)
  if (Date.parse(draft.expires_at) <= now.getTime()) refuse('mandate_expired', `payment.execution_date.not_after (${draft.expires_at}) has passed`, 'payment.execution_date')
  return {
    draft,
    mandate,
    issuer: { trusted_key_id: key.id, kid: key.kid, role: key.role },
    presentation_hash: sha256Base64Url(token),
    issuer_jwt_hash: sha256Base64Url(jwt),
    issued_at: iat === undefined ? null : new Date(iat * 1000).toISOString(),
  }
}
