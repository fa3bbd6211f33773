import { createPrivateKey, sign } from 'node:crypto'
import { SDJwtInstance } from '@sd-jwt/core'
import { digest, generateSalt } from '@sd-jwt/crypto-nodejs'
import { exportJWK, generateKeyPair, type JWK } from 'jose'

/**
 * Test issuers of AP2 mandates: real keys (jose), real SD-JWTs (@sd-jwt/core), in the shape of AP2's
 * payment_mandate.md examples: the mandate is a disclosed element of `delegate_payload`, and the
 * members of each `allowed` list are disclosures of their own.
 */
export interface TestKey {
  kid: string
  alg: 'ES256' | 'EdDSA' | 'RS256'
  publicJwk: JWK
  privateJwk: JWK
}

export async function makeKey(kid: string, alg: TestKey['alg'] = 'ES256'): Promise<TestKey> {
  const pair = await generateKeyPair(alg, { extractable: true, ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}) })
  const publicJwk = await exportJWK(pair.publicKey)
  const privateJwk = await exportJWK(pair.privateKey)
  return { kid, alg, publicJwk: { ...publicJwk, kid }, privateJwk }
}

function signerOf(key: TestKey) {
  const privateKey = createPrivateKey({ key: key.privateJwk as never, format: 'jwk' })
  return async (data: string) => (key.alg === 'ES256'
    ? sign('sha256', Buffer.from(data), { key: privateKey, dsaEncoding: 'ieee-p1363' })
    : sign(key.alg === 'RS256' ? 'sha256' : null, Buffer.from(data), privateKey)).toString('base64url')
}

export interface IssueOptions {
  /** Header members over { alg, typ, kid }; kid: null leaves it out. */
  header?: Record<string, unknown>
  /** Claims of the issuer-signed payload beside delegate_payload (iss, iat, exp, ...). */
  topLevel?: Record<string, unknown>
  /** Put the `allowed` members behind disclosures of their own (default true). */
  discloseAllowed?: boolean
  /**
   * Put each constraint behind a disclosure of its own, and the `max` of payment.budget behind another
   * (as an issuer may, so that a holder could withhold them: Wishpay must refuse that).
   */
  discloseConstraints?: boolean
  /** The digest algorithm (_sd_alg); sha-256 unless a test wants another. */
  hashAlg?: 'sha-256' | 'sha-512'
}

/** An open mandate as a compact SD-JWT (jwt~disclosures~), signed by key. */
export async function issueMandate(key: TestKey, mandate: Record<string, unknown>, options: IssueOptions = {}): Promise<string> {
  const instance = new SDJwtInstance({ signer: signerOf(key), signAlg: key.alg, hasher: digest, hashAlg: options.hashAlg ?? 'sha-256', saltGenerator: generateSalt })
  const inner: Record<string, unknown> = {}
  if (Array.isArray(mandate.constraints)) {
    const constraints: Record<string, unknown> = options.discloseConstraints ? { _sd: mandate.constraints.map((_: unknown, i: number) => i) } : {}
    mandate.constraints.forEach((c: any, i: number) => {
      const frame: Record<string, unknown> = {}
      if (options.discloseAllowed !== false && Array.isArray(c?.allowed) && c.allowed.length > 0) frame.allowed = { _sd: c.allowed.map((_: unknown, j: number) => j) }
      if (options.discloseConstraints && c?.type === 'payment.budget') frame._sd = ['max']
      if (Object.keys(frame).length > 0) constraints[i] = frame
    })
    inner.constraints = constraints
  }
  const header: Record<string, unknown> = { typ: 'example+sd-jwt', kid: key.kid, ...options.header }
  if (header.kid === null) delete header.kid
  const frame = { delegate_payload: { _sd: [0], 0: inner } }
  return instance.issue({ ...options.topLevel, delegate_payload: [mandate] } as never, frame as never, { header })
}

/** An open Payment Mandate's content with every constraint Wishpay maps; override what a test needs. */
export function openMandate(agentJwk: JWK, nowSeconds: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    vct: 'mandate.payment.open.1',
    constraints: [
      { type: 'payment.amount_range', currency: 'USD', max: 20000, min: 100 },
      { type: 'payment.budget', currency: 'USD', max: 50000 },
      { type: 'payment.agent_recurrence', frequency: 'MONTHLY', max_occurrences: 12 },
      { type: 'payment.execution_date', not_before: '2026-01-01T00:00:00Z', not_after: '2027-12-31T23:59:59Z' },
      { type: 'payment.allowed_payees', allowed: [{ id: 'merchant_1', name: 'Demo Merchant', website: 'https://demo-merchant.example' }, { id: 'merchant_2', name: 'Other Merchant' }] },
      { type: 'payment.allowed_payment_instruments', allowed: [{ id: 'pi_1', type: 'card', description: 'Card 4242' }] },
      { type: 'payment.reference', conditional_transaction_id: 'FzLoxbbtgQGYZxoSM2NJYJtkFTSsdfUBoVEQ12k7JN8' },
    ],
    cnf: { jwk: { kty: agentJwk.kty, crv: agentJwk.crv, x: agentJwk.x, ...(agentJwk.y ? { y: agentJwk.y } : {}) } },
    iat: nowSeconds,
    exp: nowSeconds + 3600,
    ...overrides,
  }
}

/** The claims of a closed mandate's key-binding JWT beside delegate_payload. */
export interface ClosedClaims {
  aud: string
  nonce: string
  /** The hash of the open mandate as presented (VerifiedOpenMandate.presentation_hash). */
  sd_hash: string
  /** Defaults to now. */
  iat?: number
  exp?: number
}

export interface ClosedIssueOptions {
  /** Header members over { typ: 'kb+sd-jwt', alg } (alg is the key's). */
  header?: Record<string, unknown>
  /** Members of the content put behind disclosures of their own (to reorder or withhold them). */
  disclose?: string[]
}

/**
 * A closed Payment Mandate as a compact SD-JWT (kbjwt~disclosure~), signed by the agent key the open
 * mandate binds in cnf, in the shape of AP2's example: typ kb+sd-jwt, the content one disclosed
 * element of delegate_payload.
 */
export async function issueClosedMandate(
  agentKey: TestKey, content: Record<string, unknown>, claims: ClosedClaims, options: ClosedIssueOptions = {},
): Promise<string> {
  const instance = new SDJwtInstance({ signer: signerOf(agentKey), signAlg: agentKey.alg, hasher: digest, hashAlg: 'sha-256', saltGenerator: generateSalt })
  const { iat = Math.floor(Date.now() / 1000), exp, ...rest } = claims
  const payload = { delegate_payload: [content], iat, ...rest, ...(exp === undefined ? {} : { exp }) }
  const frame = { delegate_payload: { _sd: [0], ...(options.disclose ? { 0: { _sd: options.disclose } } : {}) } }
  return instance.issue(payload as never, frame as never, { header: { typ: 'kb+sd-jwt', ...options.header } })
}

/** A closed Payment Mandate's content that satisfies openMandate()'s defaults; override what a test needs. */
export function closedMandate(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    vct: 'mandate.payment.1',
    transaction_id: 'NivWhuqfzcvZNapvIEJ2-3tsdQLkiuIcye2g46WVgX8',
    payee: { id: 'merchant_1', name: 'Demo Merchant', website: 'https://demo-merchant.example' },
    payment_amount: { amount: 19900, currency: 'USD' },
    payment_instrument: { id: 'pi_1', type: 'card', description: 'Card 4242' },
    ...overrides,
  }
}
