import { createPublicKey, verify, type JsonWebKey, type KeyObject } from 'node:crypto'
import canonicalize from 'canonicalize'
import { acpErrors, type AcpError } from './errors.js'

/**
 * Verification of an ACP request signature (`Signature` and `Timestamp` headers).
 *
 * What the spec says, and only that (rfcs/rfc.delegate_payment.md, ACP 2026-04-17):
 * - §2.2 "Client MUST serialize the request using a canonical JSON scheme. Client MUST compute a
 *   detached signature with its private key, base64url-encode it, and place it in the Signature
 *   header. Client MUST include Timestamp (RFC 3339)".
 * - §2.3 "Signature: <base64url> (RECOMMENDED; identity verification over canonical request)",
 *   "Timestamp: <RFC3339> (RECOMMENDED)".
 * - §6 "Integrity: Signature over canonical JSON SHOULD be verified (algorithm policy advertised
 *   out-of-band). Freshness: Timestamp SHOULD be required and checked within an acceptable
 *   clock-skew window." §2.1: "Server advertises acceptable signature algorithms (e.g., Ed25519,
 *   ES256) out-of-band."
 * So the signed bytes are the canonical JSON of the request BODY only; the Timestamp is not part of
 * them (the spec never says it is), and is checked for freshness on its own. The discovery RFC
 * (§11) confirms signing is not yet formalized ("Deferred pending formalization of ACP's request
 * signing specification").
 *
 * Where the spec leaves it open, Wishpay's policy:
 * - canonical JSON = RFC 8785 (JCS), through the `canonicalize` package (the scheme the RFC names
 *   for request equivalence in §5.2: "RFC 8785 (JCS) canonicalization"). Member order and number
 *   spelling therefore do not matter; everything else does.
 * - algorithms: Ed25519 (JWK kty OKP, crv Ed25519) and ES256 (JWK kty EC, crv P-256, SHA-256, the
 *   signature as JWS writes it: r‖s, 64 bytes). Any other key is never used. A key whose JWK `alg`
 *   names another algorithm is skipped.
 * - the signature is tried against each key given (the spec defines no key id header).
 * - Timestamp: RFC 3339 with a time zone, within ±300 seconds of `now` (inclusive).
 * - both headers required when verification is asked for (the spec: SHOULD be required).
 */

export const ACP_SIGNATURE_TOLERANCE_SECONDS = 300

export type AcpSignatureAlgorithm = 'Ed25519' | 'ES256'

export interface AcpSignatureInput {
  /** The parsed request body (what JSON.parse gave), canonicalized here with RFC 8785. */
  body: unknown
  /** The `Signature` header: base64url (padding tolerated), or undefined when absent. */
  signature: string | undefined
  /** The `Timestamp` header: RFC 3339, or undefined when absent. */
  timestamp: string | undefined
  /** Public keys of the client, as JWKs. */
  keys: readonly JsonWebKey[]
  now: Date
  toleranceSeconds?: number
}

export type AcpSignatureResult =
  | { ok: true, algorithm: AcpSignatureAlgorithm, kid: string | undefined }
  | { ok: false, error: AcpError }

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/
const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/

interface UsableKey { algorithm: AcpSignatureAlgorithm, key: KeyObject, kid: string | undefined }

function usableKey(jwk: JsonWebKey): UsableKey | undefined {
  let algorithm: AcpSignatureAlgorithm
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') algorithm = 'Ed25519'
  else if (jwk.kty === 'EC' && jwk.crv === 'P-256') algorithm = 'ES256'
  else return undefined
  // A JWK that names its algorithm must name this one ("EdDSA" is JOSE's name for Ed25519).
  if (jwk.alg !== undefined && jwk.alg !== algorithm && !(algorithm === 'Ed25519' && jwk.alg === 'EdDSA')) return undefined
  try {
    // Public members only: a private JWK given by mistake is used as its public half.
    const { d: _d, ...publicJwk } = jwk
    return { algorithm, key: createPublicKey({ key: publicJwk, format: 'jwk' }), kid: typeof jwk.kid === 'string' ? jwk.kid : undefined }
  } catch {
    return undefined
  }
}

function verifiedWith(key: UsableKey, data: Buffer, signature: Buffer): boolean {
  try {
    if (key.algorithm === 'Ed25519') return signature.length === 64 && verify(null, data, key.key, signature)
    return signature.length === 64 && verify('sha256', data, { key: key.key, dsaEncoding: 'ieee-p1363' }, signature)
  } catch {
    return false
  }
}

const refuse = (error: AcpError): AcpSignatureResult => ({ ok: false, error })

export function verifyAcpSignature(input: AcpSignatureInput): AcpSignatureResult {
  const { body, signature, timestamp, keys, now } = input
  const tolerance = input.toleranceSeconds ?? ACP_SIGNATURE_TOLERANCE_SECONDS

  if (signature === undefined || signature.trim() === '') return refuse(acpErrors.signature('missing_signature', 'Signature header is required'))
  if (timestamp === undefined || timestamp.trim() === '') return refuse(acpErrors.signature('missing_timestamp', 'Timestamp header is required'))

  const ts = timestamp.trim()
  const at = RFC3339.test(ts) ? Date.parse(ts) : Number.NaN
  if (Number.isNaN(at)) return refuse(acpErrors.signature('invalid_timestamp', 'Timestamp header must be an RFC 3339 date-time'))
  if (Math.abs(now.getTime() - at) > tolerance * 1000) {
    return refuse(acpErrors.signature('timestamp_out_of_window', `Timestamp is more than ${tolerance} seconds from the server's clock`))
  }

  const sig = signature.trim()
  if (!BASE64URL.test(sig)) return refuse(acpErrors.signature('invalid_signature', 'Signature header must be base64url'))
  const signatureBytes = Buffer.from(sig.replace(/=+$/, ''), 'base64url')

  let canonical: string | undefined
  try {
    canonical = canonicalize(body)
  } catch {
    canonical = undefined
  }
  if (canonical === undefined) return refuse(acpErrors.signature('invalid_signature', 'Request body cannot be canonicalized'))
  const data = Buffer.from(canonical, 'utf8')

  for (const jwk of keys) {
    const key = usableKey(jwk)
    if (key && verifiedWith(key, data, signatureBytes)) return { ok: true, algorithm: key.algorithm, kid: key.kid }
  }
  return refuse(acpErrors.signature('invalid_signature', 'Signature does not verify with any key of this client'))
}
