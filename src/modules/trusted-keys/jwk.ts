import { loadJose } from '../../lib/jose.js'
import type { StoredPublicJwkValue, TrustedJwkInputValue } from './schemas.js'

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi'] as const
const B64URL = /^[A-Za-z0-9_-]+$/
const MIN_RSA_BITS = 2048

export interface JwkProblem {
  /** The member at fault, under public_jwk (public_jwk.d, public_jwk.crv, ...). */
  param: string
  message: string
}

const problem = (member: string, message: string): JwkProblem => ({ param: member ? `public_jwk.${member}` : 'public_jwk', message })

function bitLength(base64url: string): number {
  const bytes = Buffer.from(base64url, 'base64url')
  let i = 0
  while (i < bytes.length && bytes[i] === 0) i++
  if (i === bytes.length) return 0
  return (bytes.length - i - 1) * 8 + (32 - Math.clz32(bytes[i]!))
}

/** The JWS algorithms a key may sign with here (what the AP2 verifier accepts for it). */
export function algorithmsOf(jwk: { kty: string, crv?: string | undefined }): string[] {
  if (jwk.kty === 'EC' && jwk.crv === 'P-256') return ['ES256']
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') return ['EdDSA']
  if (jwk.kty === 'RSA') return ['RS256', 'PS256']
  return []
}

/**
 * Checks a JWK an account wants to trust: public members only, EC P-256, OKP Ed25519 or RSA of at
 * least 2048 bits, an alg that fits, and a key the crypto library accepts (a point on the curve).
 * Returns the key's public members, or the first problem, naming its member.
 */
export async function checkTrustedJwk(jwk: TrustedJwkInputValue): Promise<{ jwk: StoredPublicJwkValue } | { problem: JwkProblem }> {
  for (const member of PRIVATE_MEMBERS) {
    if (jwk[member] !== undefined) return { problem: problem(member, `public_jwk.${member} is a private key member: send the public key only`) }
  }
  const base64 = (member: 'x' | 'y' | 'n' | 'e') => jwk[member] !== undefined && !B64URL.test(jwk[member]!)
  for (const member of ['x', 'y', 'n', 'e'] as const) {
    if (base64(member)) return { problem: problem(member, `public_jwk.${member} must be base64url`) }
  }
  let stored: StoredPublicJwkValue
  if (jwk.kty === 'EC') {
    if (jwk.crv !== 'P-256') return { problem: problem('crv', `public_jwk.crv must be P-256 for an EC key (got ${jwk.crv ?? 'none'})`) }
    if (jwk.x === undefined || jwk.y === undefined) return { problem: problem(jwk.x === undefined ? 'x' : 'y', 'An EC key needs x and y') }
    if (jwk.n !== undefined || jwk.e !== undefined) return { problem: problem(jwk.n !== undefined ? 'n' : 'e', 'An EC key has no n or e') }
    stored = { kty: 'EC', kid: jwk.kid, crv: 'P-256', x: jwk.x, y: jwk.y }
  } else if (jwk.kty === 'OKP') {
    if (jwk.crv !== 'Ed25519') return { problem: problem('crv', `public_jwk.crv must be Ed25519 for an OKP key (got ${jwk.crv ?? 'none'})`) }
    if (jwk.x === undefined) return { problem: problem('x', 'An OKP key needs x') }
    if (jwk.y !== undefined || jwk.n !== undefined || jwk.e !== undefined) return { problem: problem(jwk.y !== undefined ? 'y' : jwk.n !== undefined ? 'n' : 'e', 'An Ed25519 key has x only') }
    stored = { kty: 'OKP', kid: jwk.kid, crv: 'Ed25519', x: jwk.x }
  } else if (jwk.kty === 'RSA') {
    if (jwk.n === undefined || jwk.e === undefined) return { problem: problem(jwk.n === undefined ? 'n' : 'e', 'An RSA key needs n and e') }
    if (jwk.crv !== undefined || jwk.x !== undefined || jwk.y !== undefined) return { problem: problem(jwk.crv !== undefined ? 'crv' : jwk.x !== undefined ? 'x' : 'y', 'An RSA key has no crv, x or y') }
    const bits = bitLength(jwk.n)
    if (bits < MIN_RSA_BITS) return { problem: problem('n', `An RSA key must have at least ${MIN_RSA_BITS} bits (this one has ${bits})`) }
    stored = { kty: 'RSA', kid: jwk.kid, n: jwk.n, e: jwk.e }
  } else {
    return { problem: problem('kty', `public_jwk.kty must be EC, OKP or RSA (got ${jwk.kty})`) }
  }
  const algs = algorithmsOf(stored)
  if (jwk.alg !== undefined) {
    if (!algs.includes(jwk.alg)) return { problem: problem('alg', `public_jwk.alg ${jwk.alg} does not fit this key (${algs.join(' or ')})`) }
    stored.alg = jwk.alg
  }
  if (jwk.use !== undefined) stored.use = jwk.use
  const { importJWK } = await loadJose()
  try {
    await importJWK({ ...stored }, stored.alg ?? algs[0]!)
  } catch {
    return { problem: problem('', 'public_jwk is not a valid public key (for EC, the point must be on the curve)') }
  }
  return { jwk: stored }
}
