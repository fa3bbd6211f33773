import assert from 'node:assert/strict'
import { generateKeyPairSync, sign, type JsonWebKey, type KeyObject } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import canonicalize from 'canonicalize'
import { verifyAcpSignature, type AcpSignatureInput } from '../../src/modules/acp/signature.js'

const DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared/protocols/acp-2026-04-17')
const examples = JSON.parse(fs.readFileSync(path.join(DIR, 'examples.delegate_payment.json'), 'utf8'))
const BODY = examples.delegate_payment_request
const NOW = new Date('2026-06-15T12:00:00.000Z')
const TS = '2026-06-15T12:00:00Z'

interface Signer { alg: 'Ed25519' | 'ES256', privateKey: KeyObject, jwk: JsonWebKey }
function signer(alg: Signer['alg'], kid: string): Signer {
  const pair = alg === 'Ed25519' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' })
  return { alg, privateKey: pair.privateKey, jwk: { ...pair.publicKey.export({ format: 'jwk' }), kid } }
}
/** A client's signature: RFC 8785 canonical body, detached, base64url. */
function signBody(s: Signer, body: unknown): string {
  const data = Buffer.from(canonicalize(body)!, 'utf8')
  const sig = s.alg === 'Ed25519' ? sign(null, data, s.privateKey) : sign('sha256', data, { key: s.privateKey, dsaEncoding: 'ieee-p1363' })
  return sig.toString('base64url')
}

const ed = signer('Ed25519', 'ed-1')
const es = signer('ES256', 'es-1')
const other = signer('Ed25519', 'ed-other')
const otherEs = signer('ES256', 'es-other')

const check = (s: Signer, overrides: Partial<AcpSignatureInput> = {}) =>
  verifyAcpSignature({ body: BODY, signature: signBody(s, BODY), timestamp: TS, keys: [ed.jwk, es.jwk], now: NOW, ...overrides })
const refusedWith = (result: ReturnType<typeof verifyAcpSignature>, code: string) => {
  assert.equal(result.ok, false, 'expected a refusal')
  if (!result.ok) {
    assert.equal(result.error.code, code)
    assert.equal(result.error.status, 401)
  }
}

describe('verifyAcpSignature', () => {
  for (const s of [ed, es]) {
    test(`${s.alg}: a genuine signature verifies and names the key`, () => {
      assert.deepEqual(check(s), { ok: true, algorithm: s.alg, kid: s.jwk.kid })
    })

    test(`${s.alg}: members reordered (and 1.0 for 1) still verify: the body is canonicalized`, () => {
      const reordered = JSON.parse(`{"metadata":${JSON.stringify(BODY.metadata)},"risk_signals":[{"action":"manual_review","score":10.0,"type":"card_testing"}],`
        + `"billing_address":${JSON.stringify(BODY.billing_address)},"allowance":${JSON.stringify(BODY.allowance)},"payment_method":${JSON.stringify(BODY.payment_method)}}`)
      assert.notEqual(JSON.stringify(reordered), JSON.stringify(BODY))
      assert.equal(check(s, { body: reordered }).ok, true)
    })

    test(`${s.alg}: a tampered body is refused`, () => {
      const tampered = structuredClone(BODY)
      tampered.allowance.max_amount = 200000
      refusedWith(check(s, { body: tampered }), 'invalid_signature')
      const reorderedArray = structuredClone(BODY)
      reorderedArray.payment_method.checks_performed = ['cvv', 'avs']
      refusedWith(check(s, { body: reorderedArray }), 'invalid_signature')
    })

    test(`${s.alg}: a signature by another key is refused`, () => {
      const stranger = s.alg === 'Ed25519' ? other : otherEs
      refusedWith(check(stranger), 'invalid_signature')
      refusedWith(check(s, { keys: [stranger.jwk] }), 'invalid_signature')
      refusedWith(check(s, { keys: [] }), 'invalid_signature')
    })
  }

  test('a key whose JWK alg names another algorithm, or of another kind, is never used', () => {
    refusedWith(check(ed, { keys: [{ ...ed.jwk, alg: 'ES256' }] }), 'invalid_signature')
    assert.equal(check(ed, { keys: [{ ...ed.jwk, alg: 'EdDSA' }] }).ok, true)
    assert.equal(check(es, { keys: [{ ...es.jwk, alg: 'ES256' }] }).ok, true)
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const rsaSig = sign('sha256', Buffer.from(canonicalize(BODY)!), rsa.privateKey).toString('base64url')
    refusedWith(check(ed, { signature: rsaSig, keys: [rsa.publicKey.export({ format: 'jwk' })] }), 'invalid_signature')
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' })
    refusedWith(check(ed, { keys: [p384.publicKey.export({ format: 'jwk' })] }), 'invalid_signature')
    refusedWith(check(ed, { keys: [{ kty: 'OKP', crv: 'Ed25519', x: 'not-a-key' }] }), 'invalid_signature')
  })

  test('an ES256 signature in DER (not JWS r‖s) is refused; padding and surrounding spaces are tolerated', () => {
    const der = sign('sha256', Buffer.from(canonicalize(BODY)!), es.privateKey).toString('base64url')
    refusedWith(check(es, { signature: der }), 'invalid_signature')
    const sig = signBody(ed, BODY)
    const padded = Buffer.from(sig, 'base64url').toString('base64').replace(/\+/g, '-').replace(/\//g, '_')
    assert.ok(padded.endsWith('='))
    assert.equal(check(ed, { signature: ` ${padded} ` }).ok, true)
    refusedWith(check(ed, { signature: Buffer.from(sig, 'base64url').toString('base64').replace(/=+$/, '') + '+/' }), 'invalid_signature')
  })

  test('the Timestamp must be within ±300 s of now (inclusive); stale and future ones are refused', () => {
    assert.equal(check(ed, { timestamp: '2026-06-15T11:55:00Z' }).ok, true)
    assert.equal(check(ed, { timestamp: '2026-06-15T12:05:00Z' }).ok, true)
    assert.equal(check(ed, { timestamp: '2026-06-15T14:04:59+02:00' }).ok, true)
    refusedWith(check(ed, { timestamp: '2026-06-15T11:54:59.999Z' }), 'timestamp_out_of_window')
    refusedWith(check(ed, { timestamp: '2026-06-15T12:05:00.001Z' }), 'timestamp_out_of_window')
    refusedWith(check(ed, { timestamp: '2026-06-14T12:00:00Z' }), 'timestamp_out_of_window')
    assert.equal(check(ed, { timestamp: '2026-06-15T12:09:00Z', toleranceSeconds: 600 }).ok, true)
  })

  test('a Timestamp that is not RFC 3339 is refused', () => {
    for (const ts of ['1781524800', '2026-06-15', '2026-06-15T12:00:00', 'Mon, 15 Jun 2026 12:00:00 GMT', '2026-06-15T25:00:00Z']) {
      refusedWith(check(ed, { timestamp: ts }), 'invalid_timestamp')
    }
  })

  test('missing headers are refused by name, the signature first', () => {
    refusedWith(check(ed, { signature: undefined }), 'missing_signature')
    refusedWith(check(ed, { signature: '' }), 'missing_signature')
    refusedWith(check(ed, { timestamp: undefined }), 'missing_timestamp')
    refusedWith(check(ed, { signature: undefined, timestamp: undefined }), 'missing_signature')
  })

  test('refusals are ACP flat errors of type unauthorized', () => {
    const result = check(other)
    assert.equal(result.ok, false)
    if (!result.ok) assert.deepEqual(Object.keys(result.error.toBody()), ['type', 'code', 'message'])
    refusedWith(check(ed, { body: undefined }), 'invalid_signature')
  })
})
