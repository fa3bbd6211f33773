import { createHash } from 'node:crypto'
import type { DecodedSDJwt } from '@sd-jwt/decode'
import type { JWK } from 'jose'
import { loadJose } from '../../lib/jose.js'
import { mapConstraints, type OpenMandateDraft, toDraft } from './constraints.js'
import { isObject, refuse } from './refusal.js'

export {
  FREQUENCY_WINDOW, type Merchant, type OpenMandateDraft, type PaymentInstrument, RECURRENCE_FREQUENCIES, type RecurrenceFrequency,
} from './constraints.js'
export { OPEN_MANDATE_REFUSAL_CODES, OpenMandateRefusal, type OpenMandateRefusalCode } from './refusal.js'

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
 *    (and is the key's `alg` when it has one)                            → issuer_untrusted
 * 3. the issuer signature (jose, against that key only)                 → mandate_signature_invalid
 * 4. disclosures: `_sd_alg` sha-256, each one decodable, unique and reached from the signed payload;
 *    inside the mandate every digest's disclosure presented, but for entries of `allowed` lists
 *                                                                         → disclosure_invalid
 *    (nesting deeper than 64 levels                                      → mandate_malformed)
 * 5. exactly one disclosed mandate with `vct` `mandate.payment.open.1`  → mandate_type_unsupported
 * 6. `iat`/`nbf` not in the future (60 s leeway), `exp` not passed (top level and mandate, the earliest);
 *    each a safe integer Unix time in years 1970..9999 (else mandate_malformed)
 *                                                                         → mandate_not_yet_valid, mandate_expired
 * 7. `cnf.jwk` an EC P-256 or Ed25519 public key                        → cnf_invalid
 * 8. each constraint (constraints.ts): a known type (AP2: an unknown one MUST fail)
 *                                                                         → constraint_unsupported (param: the type)
 *    and well formed (integer minor units, AP2 #339; known currency; ordered range; RFC 3339 dates)
 *                                                                         → constraint_invalid (param: the type)
 * 9. the result bounds spending and time: a cap and an end            → mandate_unbounded
 */

export const OPEN_MANDATE_VCT = 'mandate.payment.open.1'

export type TrustedKeyRole = 'trusted_agent_provider' | 'user_credential_issuer'

/** What the verifier needs of a trusted key (src/modules/trusted-keys). */
export interface IssuerKey {
  id: string
  kid: string
  role: TrustedKeyRole
  status: 'active' | 'revoked'
  public_jwk: JWK
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
  return createHash('sha256').update(text).digest('base64url')
}

/** The SD-JWT hasher, as @sd-jwt/crypto-nodejs's `digest`: `sha-256` is node's `sha256`. */
const sdJwtHasher = (data: string | ArrayBuffer, alg: string): Uint8Array =>
  new Uint8Array(createHash(alg.replace('-', '').toLowerCase()).update(typeof data === 'string' ? data : Buffer.from(data)).digest())

/**
 * @sd-jwt/decode, imported when the first mandate is presented: a server whose clients never use AP2
 * mandates never loads it (test/unit/lazy-modules.test.ts keeps it so).
 */
let sdJwtDecode: Promise<typeof import('@sd-jwt/decode')> | undefined
const loadSdJwtDecode = () => (sdJwtDecode ??= import('@sd-jwt/decode'))

/**
 * Imports what verifying a mandate needs (jose, @sd-jwt/decode) ahead of a transaction, so that its
 * first use does not hold the store's writer while modules load.
 */
export async function loadMandateVerifiers(): Promise<void> {
  await Promise.all([loadJose(), loadSdJwtDecode()])
}

/** The JWS algorithms each key type may sign with here. */
function algorithmsFor(jwk: JWK): string[] {
  if (jwk.kty === 'EC' && jwk.crv === 'P-256') return ['ES256']
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') return ['EdDSA', 'Ed25519']
  if (jwk.kty === 'RSA') return ['RS256', 'PS256']
  return []
}

/** A key with an alg signs with that one only (RFC 7517 4.4); else with any its type allows. */
export function allowedAlgorithms(jwk: JWK): string[] {
  return jwk.alg === undefined ? algorithmsFor(jwk) : algorithmsFor(jwk).filter((a) => a === jwk.alg)
}

/**
 * The signed JWT of a compact SD-JWT presented as `jwt~d1~…~dn~`: an open mandate (without a
 * key-binding JWT) or a closed one (whose signed JWT is the key-binding JWT). `what` names it in refusals.
 */
export function splitToken(token: string, what = 'open mandate'): { jwt: string } {
  if (typeof token !== 'string' || token.length === 0) refuse('mandate_malformed', `The ${what} must be a compact SD-JWT string`)
  const parts = token.split('~')
  if (parts.length < 2) refuse('mandate_malformed', `The ${what} must be a compact SD-JWT (signed JWT~disclosures~)`)
  if (parts[parts.length - 1] !== '') {
    refuse('mandate_malformed', `The ${what} is presented without a key-binding JWT after it: the token must end with "~"`)
  }
  if (parts.slice(1, -1).some((p) => p === '')) refuse('mandate_malformed', `An empty disclosure in the ${what} (only a chain of mandates, open~~closed, has "~~")`)
  const jwt = parts[0]!
  if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(jwt)) refuse('mandate_malformed', `The signed part of the ${what} is not a compact JWS`)
  return { jwt }
}

export function decodeHeader(jwt: string): Record<string, unknown> {
  try {
    const header = JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString('utf8')) as unknown
    if (isObject(header)) return header
  } catch {
    // refused below
  }
  return refuse('mandate_malformed', 'The JWT header is not a base64url JSON object')
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
  const allowed = allowedAlgorithms(key.public_jwk)
  if (typeof alg !== 'string' || !allowed.includes(alg)) {
    return refuse('issuer_untrusted', `alg '${String(alg)}' does not fit the trusted key '${kid}' (${allowed.join(', ') || 'none'})`, 'alg')
  }
  return key
}

/** Verifies a compact JWS with one key and one algorithm (jose) and returns its JSON payload; `failure` is the refusal's message. */
export async function verifyJws(jwt: string, jwk: JWK, alg: string, failure: string): Promise<Record<string, unknown>> {
  let payload: Uint8Array
  const { compactVerify, importJWK } = await loadJose()
  try {
    const publicKey = await importJWK(jwk, alg)
    payload = (await compactVerify(jwt, publicKey, { algorithms: [alg] })).payload
  } catch {
    return refuse('mandate_signature_invalid', failure)
  }
  try {
    const parsed = JSON.parse(Buffer.from(payload).toString('utf8')) as unknown
    if (isObject(parsed)) return parsed
  } catch {
    // refused below
  }
  return refuse('mandate_malformed', 'The signed JWT payload is not a JSON object')
}

/** How deep the signed payload and its disclosures may nest (an AP2 mandate needs about 8). */
const MAX_DEPTH = 64

type Disclosure = DecodedSDJwt['disclosures'][number]

/**
 * Replaces `_sd` digests and `{"...": digest}` list elements by their disclosures, depth first from the
 * signed payload, so that only disclosures reachable from it are read. Each digest may occur once.
 *
 * Withholding a disclosure is allowed outside the mandate (another delegate_payload entry) and, in an
 * open mandate, for an entry of an `allowed` list (payees, instruments: AP2's selective disclosure,
 * which narrows the mandate). Anywhere else inside the mandate it would loosen it (a constraint or
 * one of its members left out) or hide what was signed, so it is refused. The mandate is the object
 * whose `vct` is the one asked for.
 */
class Unpacker {
  readonly used = new Set<string>()
  private readonly seen = new Set<string>()
  constructor(
    private readonly byDigest: ReadonlyMap<string, Disclosure>,
    private readonly vct: string,
    /** The member whose list entries may be withheld inside the mandate; null: none. */
    private readonly withholdable: string | null,
  ) {}

  private take(digest: unknown): Disclosure | undefined {
    if (typeof digest !== 'string') return refuse('disclosure_invalid', 'A digest is not a string')
    if (this.seen.has(digest)) refuse('disclosure_invalid', 'A digest appears more than once in the mandate')
    this.seen.add(digest)
    const found = this.byDigest.get(digest)
    if (found) this.used.add(digest)
    return found
  }

  private withheld(inMandate: boolean, what: string): void {
    if (inMandate) refuse('disclosure_invalid', `The disclosure of ${what} inside the mandate is withheld: only entries of an allowed list may be`)
  }

  unpack(value: unknown, depth: number, inMandate: boolean, inAllowed = false): unknown {
    if (depth > MAX_DEPTH) return refuse('mandate_malformed', `The mandate nests deeper than ${MAX_DEPTH} levels`)
    if (Array.isArray(value)) {
      const out: unknown[] = []
      for (const item of value) {
        if (!isObject(item) || !('...' in item)) {
          out.push(this.unpack(item, depth + 1, inMandate))
          continue
        }
        if (Object.keys(item).length !== 1) refuse('disclosure_invalid', 'A {"...": digest} list element has other members')
        const found = this.take(item['...'])
        if (!found) this.withheld(inMandate && !inAllowed, 'a list element')
        else if (found.key !== undefined) refuse('disclosure_invalid', 'A named disclosure stands for a list element')
        else out.push(this.unpack(found.value, depth + 1, inMandate))
      }
      return out
    }
    if (!isObject(value)) return value
    const members: Array<[string, unknown]> = []
    let withheld = 0
    for (const [name, member] of Object.entries(value)) {
      if (name !== '_sd') {
        members.push([name, member])
        continue
      }
      if (!Array.isArray(member)) refuse('disclosure_invalid', '_sd must be an array of digests')
      for (const digest of member as unknown[]) {
        const found = this.take(digest)
        if (!found) withheld += 1
        else if (found.key === undefined || found.key === '_sd' || found.key === '...') refuse('disclosure_invalid', 'An _sd digest names a disclosure that is not a member')
        else members.push([found.key, found.value])
      }
    }
    if (new Set(members.map(([name]) => name)).size !== members.length) refuse('disclosure_invalid', 'A disclosed member repeats another member')
    const mandateHere = inMandate || members.some(([name, v]) => name === 'vct' && v === this.vct)
    if (withheld > 0) this.withheld(mandateHere, 'a member')
    // fromEntries defines own members, so a member named __proto__ stays data.
    return Object.fromEntries(members.map(([name, v]) => [name, this.unpack(v, depth + 1, mandateHere, name === this.withholdable)]))
  }
}

/**
 * Decodes the disclosures and unpacks the payload; every disclosure must be reached once from the signed
 * payload. `vct` names the mandate inside which nothing may be withheld but entries of `withholdable` lists.
 */
export async function disclose(
  token: string, payload: Record<string, unknown>, vct = OPEN_MANDATE_VCT, withholdable: string | null = 'allowed',
): Promise<Record<string, unknown>> {
  const { _sd_alg: sdAlg = 'sha-256', ...signed } = payload
  if (sdAlg !== 'sha-256') refuse('disclosure_invalid', `_sd_alg '${String(sdAlg)}' is not supported (sha-256 only)`, '_sd_alg')
  const { decodeSdJwt } = await loadSdJwtDecode()
  let decoded: DecodedSDJwt
  try {
    decoded = await decodeSdJwt(token, sdJwtHasher)
  } catch {
    return refuse('disclosure_invalid', 'A disclosure is not base64url JSON of [salt, value] or [salt, name, value]')
  }
  const byDigest = new Map(decoded.disclosures.map((d) => [d._digest!, d]))
  if (byDigest.size !== decoded.disclosures.length) refuse('disclosure_invalid', 'The same disclosure is presented twice')

  const unpacker = new Unpacker(byDigest, vct, withholdable)
  const claims = unpacker.unpack(signed, 0, false) as Record<string, unknown>
  const stray = decoded.disclosures.findIndex((d) => !unpacker.used.has(d._digest!))
  if (stray >= 0) refuse('disclosure_invalid', `Disclosure ${stray + 1} is not referenced by the signed mandate (changed or foreign)`)
  return claims
}

/** The one disclosed mandate with this vct, at the top level or in delegate_payload. */
export function findMandate(claims: Record<string, unknown>, vct = OPEN_MANDATE_VCT, what = 'an open Payment Mandate'): Record<string, unknown> {
  const candidates: Record<string, unknown>[] = []
  if (claims.vct === vct) candidates.push(claims)
  const delegated = claims.delegate_payload
  if (delegated !== undefined && !Array.isArray(delegated)) refuse('mandate_malformed', 'delegate_payload must be an array')
  for (const item of (delegated as unknown[] | undefined) ?? []) if (isObject(item) && item.vct === vct) candidates.push(item)
  if (candidates.length === 0) {
    return refuse('mandate_type_unsupported', `No disclosed mandate has vct '${vct}' (${what})`, 'vct')
  }
  if (candidates.length > 1) return refuse('mandate_malformed', `More than one mandate with vct '${vct}' is disclosed; present one`)
  return candidates[0]!
}

/** 9999-12-31T23:59:59Z is the last second a date-time (and toISOString) can hold with four digits. */
const EPOCH_END = 253402300800

export const epoch = (value: unknown, name: string): number | undefined => {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value >= EPOCH_END) {
    return refuse('mandate_malformed', `${name} must be an integer Unix time from 0 to ${EPOCH_END - 1}`, name)
  }
  return value
}

/** iat/nbf not in the future beyond leeway, exp not passed, on the signed payload and the mandate alike. */
export function checkTimes(claims: Record<string, unknown>, mandate: Record<string, unknown>, now: Date, leeway: number) {
  const nowSeconds = Math.floor(now.getTime() / 1000)
  const iats = [epoch(claims.iat, 'iat'), epoch(mandate.iat, 'iat')].filter((v) => v !== undefined)
  const exps = [epoch(claims.exp, 'exp'), epoch(mandate.exp, 'exp')].filter((v) => v !== undefined)
  const nbfs = [epoch(claims.nbf, 'nbf'), epoch(mandate.nbf, 'nbf')].filter((v) => v !== undefined)
  const iat = iats.length ? Math.max(...iats) : undefined
  const exp = exps.length ? Math.min(...exps) : undefined
  if (iat !== undefined && iat > nowSeconds + leeway) refuse('mandate_not_yet_valid', `The mandate is issued in the future (iat ${iat})`, 'iat')
  const nbf = nbfs.length ? Math.max(...nbfs) : undefined
  if (nbf !== undefined && nbf > nowSeconds + leeway) refuse('mandate_not_yet_valid', `The mandate is not valid before ${new Date(nbf * 1000).toISOString()}`, 'nbf')
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
  const { importJWK } = await loadJose()
  try {
    await importJWK(jwk, algs[0]!)
  } catch {
    return refuse('cnf_invalid', 'cnf.jwk is not a valid public key', 'cnf.jwk')
  }
  const { kty, crv, x, y } = jwk
  return y === undefined ? { kty, crv, x } : { kty, crv, x, y }
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
  const payload = await verifyJws(jwt, key.public_jwk, header.alg as string, `The issuer signature does not verify with the trusted key '${key.kid}'`)
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
