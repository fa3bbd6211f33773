import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { decodeSdJwt, unpack } from '@sd-jwt/decode'
import { digest } from '@sd-jwt/crypto-nodejs'
import { Ajv2020 } from 'ajv/dist/2020.js'
import {
  CLOSED_MANDATE_REFUSAL_CODES, type ClosedMandateRefusalCode, MandateRefusal, type OpenMandateBinding, verifyClosedPaymentMandate,
  type VerifyClosedOptions,
} from '../../src/modules/ap2/closed-mandate.js'
import { sha256Base64Url, verifyOpenPaymentMandate } from '../../src/modules/ap2/open-mandate.js'
import { AP2_MANDATE_ERROR_CODES } from '../../src/http/schemas.js'
import { CHAINED_PAYMENT_MANDATES, CLOSED_PAYMENT_MANDATE, OPEN_PAYMENT_MANDATE } from '../fixtures/ap2-payment-mandate-examples.js'
import { closedMandate, issueClosedMandate, issueMandate, makeKey, openMandate, type TestKey } from '../helpers/ap2-issuer.js'

// The AP2 schemas, loaded as test/unit/ap2-open-mandate.test.ts loads them.
const SCHEMAS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared/protocols/ap2-v0.2')
const ajv = new Ajv2020({ strict: false, allErrors: true })
for (const dir of [SCHEMAS, path.join(SCHEMAS, 'types')]) {
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.json'))) ajv.addSchema(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')))
}
const validateClosed = ajv.getSchema('https://ap2-protocol.org/schemas/payment_mandate.json')!

const NOW = new Date('2026-11-23T18:00:00.000Z')
const NOW_S = NOW.getTime() / 1000
const AUD = 'wishpay'

let issuer: TestKey
let agent: TestKey
let otherAgent: TestKey
let edAgent: TestKey
/** An open mandate issued to agent, as presented, and the binding its verification yields. */
let openToken: string
let binding: OpenMandateBinding

async function bindingOf(token: string): Promise<OpenMandateBinding> {
  const { draft, presentation_hash: hash } = await verifyOpenPaymentMandate({ token, trustedKeys: [{ id: 'tk_1', kid: issuer.kid, role: 'trusted_agent_provider', status: 'active', public_jwk: issuer.publicJwk }], now: NOW })
  return { presentation_hash: hash, cnf_jwk: draft.cnf_jwk, allowed_payees: draft.allowed_payees, allowed_payment_instruments: draft.allowed_payment_instruments }
}

const claims = (overrides: Record<string, unknown> = {}) => ({ aud: AUD, nonce: 'nonce-1', sd_hash: binding.presentation_hash, iat: NOW_S, ...overrides })
const issue = (content = closedMandate(), overrides: Record<string, unknown> = {}, key = agent) => issueClosedMandate(key, content, claims(overrides))

const verify = (token: string, overrides: Partial<VerifyClosedOptions> = {}) => verifyClosedPaymentMandate({
  token, open: binding, audience: AUD, now: NOW, payment: { amount: 19900, currency: 'USD' }, ...overrides,
})

async function refused(promise: Promise<unknown>, code: ClosedMandateRefusalCode, param?: string) {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof MandateRefusal, `not a refusal: ${String(err)}`)
    assert.equal(err.code, code, err.message)
    if (param !== undefined) assert.equal(err.param, param, err.message)
    return true
  })
}

const b64json = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
const parts = (token: string) => token.split('~')
const jwtParts = (token: string) => parts(token)[0]!.split('.')

before(async () => {
  issuer = await makeKey('issuer-1')
  agent = await makeKey('agent-1')
  otherAgent = await makeKey('agent-2')
  edAgent = await makeKey('agent-ed', 'EdDSA')
  openToken = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S))
  binding = await bindingOf(openToken)
})

describe('the encoded examples of AP2 payment_mandate.md', () => {
  const IAT = 1777342370
  let official: OpenMandateBinding
  before(async () => {
    // The issuer key is unpublished: the open mandate is decoded, not verified (ap2-open-mandate.test.ts covers it).
    const open = await decodeSdJwt(OPEN_PAYMENT_MANDATE, digest)
    const content = ((await unpack(open.jwt.payload, open.disclosures, digest)).unpackedObj as any).delegate_payload[0]
    official = {
      presentation_hash: sha256Base64Url(OPEN_PAYMENT_MANDATE),
      cnf_jwk: content.cnf.jwk,
      allowed_payees: content.constraints.find((c: any) => c.type === 'payment.allowed_payees').allowed,
      allowed_payment_instruments: null,
    }
  })
  const verifyOfficial = (token: string) => verifyClosedPaymentMandate({
    token, open: official, audience: 'credential-provider', now: new Date((IAT + 30) * 1000), payment: { amount: 19900, currency: 'USD' },
  })

  test('the closed mandate verifies against the open one, alone and chained; its content conforms to the schema', async () => {
    const result = await verifyOfficial(CLOSED_PAYMENT_MANDATE)
    assert.ok(validateClosed(result.mandate), JSON.stringify(validateClosed.errors))
    assert.deepEqual(result, {
      mandate: {
        vct: 'mandate.payment.1',
        transaction_id: 'NivWhuqfzcvZNapvIEJ2-3tsdQLkiuIcye2g46WVgX8',
        payee: { id: 'merchant_1', name: 'Demo Merchant', website: 'https://demo-merchant.example' },
        payment_amount: { amount: 19900, currency: 'USD' },
        payment_instrument: { id: 'stub', type: 'card', description: 'Card \u2022\u2022\u20224242' },
      },
      nonce: 'a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3',
      replay_key: sha256Base64Url(parts(CLOSED_PAYMENT_MANDATE)[0]!),
      reference: sha256Base64Url(CLOSED_PAYMENT_MANDATE),
      transaction_id: 'NivWhuqfzcvZNapvIEJ2-3tsdQLkiuIcye2g46WVgX8',
      payee: { id: 'merchant_1', name: 'Demo Merchant', website: 'https://demo-merchant.example' },
      payment_instrument: { id: 'stub', type: 'card', description: 'Card \u2022\u2022\u20224242' },
      issued_at: new Date(IAT * 1000).toISOString(),
    })
    // The chain gives the same result: the reference is the closed part's, without the open one.
    assert.deepEqual(await verifyOfficial(CHAINED_PAYMENT_MANDATES), result)
  })

  test('the example closed mandate is refused when its open mandate is another, or when signed for another audience', async () => {
    await refused(verifyClosedPaymentMandate({
      token: CLOSED_PAYMENT_MANDATE, open: binding, audience: 'credential-provider', now: new Date((IAT + 30) * 1000), payment: { amount: 19900, currency: 'USD' },
    }), 'mandate_signature_invalid')
    await refused(verifyClosedPaymentMandate({
      token: CHAINED_PAYMENT_MANDATES, open: { ...official, presentation_hash: binding.presentation_hash }, audience: 'credential-provider', now: new Date((IAT + 30) * 1000), payment: { amount: 19900, currency: 'USD' },
    }), 'mandate_chain_invalid', 'sd_hash')
    await refused(verifyClosedPaymentMandate({
      token: CLOSED_PAYMENT_MANDATE, open: official, audience: 'wishpay', now: new Date((IAT + 30) * 1000), payment: { amount: 19900, currency: 'USD' },
    }), 'audience_invalid', 'aud')
  })
})

describe('a valid closed Payment Mandate', () => {
  test('verifies against a verified open mandate; the content conforms to the AP2 schema', async () => {
    const token = await issue()
    const result = await verify(token)
    assert.ok(validateClosed(result.mandate), JSON.stringify(validateClosed.errors))
    assert.deepEqual(result.mandate, closedMandate())
    assert.equal(result.nonce, 'nonce-1')
    assert.equal(result.transaction_id, 'NivWhuqfzcvZNapvIEJ2-3tsdQLkiuIcye2g46WVgX8')
    assert.deepEqual(result.payee, { id: 'merchant_1', name: 'Demo Merchant', website: 'https://demo-merchant.example' })
    assert.deepEqual(result.payment_instrument, { id: 'pi_1', type: 'card', description: 'Card 4242' })
    assert.equal(result.issued_at, NOW.toISOString())
    assert.equal(result.reference, sha256Base64Url(token))
    assert.equal(result.replay_key, sha256Base64Url(parts(token)[0]!))
    // Chained after its open mandate, it verifies the same.
    assert.deepEqual(await verify(`${openToken}~${token}`), result)
  })

  test('an Ed25519 cnf key: EdDSA and Ed25519 verify; ES256 does not fit it', async () => {
    const edOpen = await issueMandate(issuer, openMandate(edAgent.publicJwk, NOW_S))
    const edBinding = await bindingOf(edOpen)
    const edClaims = claims({ sd_hash: edBinding.presentation_hash })
    assert.equal((await verify(await issueClosedMandate(edAgent, closedMandate(), edClaims), { open: edBinding })).payee.id, 'merchant_1')
    const fullySpecified = { ...edAgent, alg: 'Ed25519' } as unknown as TestKey
    assert.equal((await verify(await issueClosedMandate(fullySpecified, closedMandate(), edClaims), { open: edBinding })).payee.id, 'merchant_1')
    await refused(verify(await issueClosedMandate(agent, closedMandate(), edClaims), { open: edBinding }), 'mandate_signature_invalid', 'alg')
  })

  test('replay_key is the same however the disclosures are ordered; reference is the hash of the presentation', async () => {
    const token = await issueClosedMandate(agent, closedMandate(), claims(), { disclose: ['payee', 'payment_amount'] })
    const [jwt, ...disclosures] = parts(token)
    assert.equal(disclosures.length, 4) // three disclosures and the trailing ''
    const reordered = [jwt, disclosures[2], disclosures[0], disclosures[1], ''].join('~')
    assert.notEqual(reordered, token)
    const a = await verify(token)
    const b = await verify(reordered)
    assert.deepEqual(b.mandate, a.mandate)
    assert.equal(a.replay_key, b.replay_key)
    assert.equal(a.replay_key, sha256Base64Url(jwt!))
    assert.equal(a.reference, sha256Base64Url(token))
    assert.equal(b.reference, sha256Base64Url(reordered))
    assert.notEqual(a.reference, b.reference)
  })

  test('an aud array holding the audience is accepted; iat within the leeway and the age limit too', async () => {
    assert.ok(await verify(await issue(closedMandate(), { aud: ['other', AUD] })))
    assert.ok(await verify(await issue(closedMandate(), { iat: NOW_S + 60 })))
    assert.ok(await verify(await issue(closedMandate(), { iat: NOW_S - 600 })))
    assert.ok(await verify(await issue(closedMandate(), { iat: NOW_S - 1000 }), { maxAgeSeconds: 1000 }))
    assert.ok(await verify(await issue(closedMandate(), { iat: NOW_S + 100 }), { iatLeewaySeconds: 100 }))
  })

  test('allowed lists: null allows any, a match by id (payees) and by id and type (instruments)', async () => {
    const token = await issue(closedMandate({ payee: { id: 'merchant_9', name: 'Anyone' }, payment_instrument: { id: 'pi_9', type: 'bank' } }))
    assert.ok(await verify(token, { open: { ...binding, allowed_payees: null, allowed_payment_instruments: null } }))
    // A payee matches by id: the name is the merchant's to present.
    assert.ok(await verify(await issue(closedMandate({ payee: { id: 'merchant_2', name: 'Renamed' } }))))
  })
})

describe('refusals', () => {
  test('the codes: the verifier\'s, and mandate_replayed and nonce_invalid for the payment path; all in the API\'s 422 codes', () => {
    assert.deepEqual([...CLOSED_MANDATE_REFUSAL_CODES].sort(), [
      'audience_invalid', 'constraint_unsatisfied', 'disclosure_invalid', 'mandate_chain_invalid', 'mandate_expired', 'mandate_malformed',
      'mandate_not_yet_valid', 'mandate_replayed', 'mandate_signature_invalid', 'mandate_type_unsupported', 'nonce_invalid', 'payment_amount_mismatch',
    ])
    for (const code of CLOSED_MANDATE_REFUSAL_CODES.filter((c) => c !== 'mandate_malformed')) assert.ok((AP2_MANDATE_ERROR_CODES as readonly string[]).includes(code), code)
    assert.ok(!(AP2_MANDATE_ERROR_CODES as readonly string[]).includes('mandate_malformed'))
    assert.equal(new Set(AP2_MANDATE_ERROR_CODES).size, AP2_MANDATE_ERROR_CODES.length)
  })

  test('mandate_malformed: not a compact SD-JWT ending with "~", an empty disclosure, a bad header', async () => {
    const token = await issue()
    const [jwt, disclosure] = parts(token) as [string, string]
    await refused(verify(''), 'mandate_malformed')
    await refused(verify('not a token'), 'mandate_malformed')
    await refused(verify(jwt), 'mandate_malformed')
    await refused(verify(`${token}eyJhbGciOiJFUzI1NiJ9.e30.c2ln`), 'mandate_malformed')
    // An empty disclosure reads as a chain whose closed part is not a JWS.
    await refused(verify(`${jwt}~~${disclosure}~`), 'mandate_malformed')
    await refused(verify(`${token}~`), 'mandate_malformed')
    await refused(verify(`${openToken}~${token}~`), 'mandate_malformed')
    await refused(verify(`${openToken}~`), 'mandate_malformed')
    await refused(verify(`not json.${jwtParts(token)[1]}.${jwtParts(token)[2]}~`), 'mandate_malformed')
    await refused(verify(`${b64json([1])}.${jwtParts(token)[1]}.${jwtParts(token)[2]}~`), 'mandate_malformed')
  })

  test('mandate_malformed (typ): not a key-binding JWT, e.g. an open mandate presented as a closed one', async () => {
    await refused(verify(await issueClosedMandate(agent, closedMandate(), claims(), { header: { typ: 'example+sd-jwt' } })), 'mandate_malformed', 'typ')
    await refused(verify(await issueClosedMandate(agent, closedMandate(), claims(), { header: { typ: undefined } })), 'mandate_malformed', 'typ')
    await refused(verify(openToken), 'mandate_malformed', 'typ')
  })

  test('mandate_signature_invalid: a tampered signature or payload, another key, an alg that does not fit the cnf key', async () => {
    const token = await issue()
    const [h, p, s] = jwtParts(token) as [string, string, string]
    const rest = parts(token).slice(1).join('~')
    const flipped = `${s.slice(0, 10)}${s[10] === 'A' ? 'B' : 'A'}${s.slice(11)}`
    await refused(verify(`${h}.${p}.${flipped}~${rest}`), 'mandate_signature_invalid')
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString('utf8'))
    await refused(verify(`${h}.${b64json({ ...payload, aud: 'elsewhere' })}.${s}~${rest}`), 'mandate_signature_invalid')
    await refused(verify(await issue(closedMandate(), {}, otherAgent)), 'mandate_signature_invalid')
    // An Ed25519 key signs EdDSA, which the P-256 cnf key does not verify.
    await refused(verify(await issue(closedMandate(), {}, edAgent)), 'mandate_signature_invalid', 'alg')
    await refused(verify(`${b64json({ typ: 'kb+sd-jwt', alg: 'none' })}.${p}.~${rest}`), 'mandate_malformed')
    await refused(verify(`${b64json({ typ: 'kb+sd-jwt', alg: 'none' })}.${p}.${s}~${rest}`), 'mandate_signature_invalid', 'alg')
    await refused(verify(`${b64json({ typ: 'kb+sd-jwt', alg: 'ES384' })}.${p}.${s}~${rest}`), 'mandate_signature_invalid', 'alg')
    await refused(verify(`${b64json({ typ: 'kb+sd-jwt' })}.${p}.${s}~${rest}`), 'mandate_signature_invalid', 'alg')
  })

  test('disclosure_invalid: a tampered, foreign, withheld or repeated disclosure', async () => {
    const token = await issue()
    const [jwt, disclosure] = parts(token) as [string, string]
    const [salt, value] = JSON.parse(Buffer.from(disclosure, 'base64url').toString('utf8'))
    const tampered = b64json([salt, { ...value, payment_amount: { amount: 100, currency: 'USD' } }])
    await refused(verify(`${jwt}~${tampered}~`), 'disclosure_invalid')
    const foreign = parts(await issue())[1]!
    await refused(verify(`${token}${foreign}~`), 'disclosure_invalid')
    await refused(verify(`${token}${disclosure}~`), 'disclosure_invalid')
    await refused(verify(`${jwt}~${Buffer.from('not json').toString('base64url')}~`), 'disclosure_invalid')
    // A member of the mandate behind a disclosure of its own may not be withheld.
    const split = await issueClosedMandate(agent, closedMandate(), claims(), { disclose: ['payee'] })
    const [sjwt, ...sd] = parts(split)
    const payeeIndex = sd.findIndex((d) => d !== '' && JSON.parse(Buffer.from(d, 'base64url').toString('utf8'))[1] === 'payee')
    assert.ok(payeeIndex >= 0)
    await refused(verify([sjwt, ...sd.filter((_, i) => i !== payeeIndex)].join('~')), 'disclosure_invalid')
  })

  test('mandate_type_unsupported: no disclosed mandate.payment.1 (withheld, or another vct)', async () => {
    const token = await issue()
    await refused(verify(`${parts(token)[0]}~`), 'mandate_type_unsupported', 'vct')
    await refused(verify(await issue(closedMandate({ vct: 'mandate.payment.open.1' }))), 'mandate_type_unsupported', 'vct')
    await refused(verify(await issue(closedMandate({ vct: 'mandate.checkout.1' }))), 'mandate_type_unsupported', 'vct')
  })

  test('mandate_chain_invalid: sd_hash not the open mandate\'s, a chained open part that is another mandate', async () => {
    const otherOpen = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S))
    await refused(verify(await issue(closedMandate(), { sd_hash: sha256Base64Url(otherOpen) })), 'mandate_chain_invalid', 'sd_hash')
    await refused(verify(await issue(closedMandate(), { sd_hash: undefined })), 'mandate_chain_invalid', 'sd_hash')
    const token = await issue()
    await refused(verify(`${otherOpen}~${token}`), 'mandate_chain_invalid', 'sd_hash')
    // The open part must be presented as it was hashed: with its disclosures reordered it is another presentation.
    const [ojwt, ...od] = parts(openToken)
    const reorderedOpen = [ojwt, ...od.slice(0, -1).reverse(), ''].join('~')
    assert.notEqual(reorderedOpen, openToken)
    await refused(verify(`${reorderedOpen}~${token}`), 'mandate_chain_invalid', 'sd_hash')
  })

  test('audience_invalid: another aud, none, or an array without it', async () => {
    await refused(verify(await issue(closedMandate(), { aud: 'credential-provider' })), 'audience_invalid', 'aud')
    await refused(verify(await issue(closedMandate(), { aud: undefined })), 'audience_invalid', 'aud')
    await refused(verify(await issue(closedMandate(), { aud: ['a', 'b'] })), 'audience_invalid', 'aud')
    await refused(verify(await issue(closedMandate(), { aud: `${AUD} ` })), 'audience_invalid', 'aud')
  })

  test('mandate_malformed (nonce): missing, empty or not a string', async () => {
    for (const nonce of [undefined, '', 42]) await refused(verify(await issue(closedMandate(), { nonce })), 'mandate_malformed', 'nonce')
  })

  test('mandate_malformed (iat): missing or not an integer Unix time', async () => {
    for (const iat of [1.5, '2026-11-23', -1]) await refused(verify(await issue(closedMandate(), { iat })), 'mandate_malformed', 'iat')
    // issueClosedMandate defaults iat; an explicit null stands for none at all.
    await refused(verify(await issue(closedMandate(), { iat: null })), 'mandate_malformed', 'iat')
  })

  test('mandate_not_yet_valid: iat beyond the leeway ahead of now', async () => {
    await refused(verify(await issue(closedMandate(), { iat: NOW_S + 61 })), 'mandate_not_yet_valid', 'iat')
    await refused(verify(await issue(closedMandate({ iat: NOW_S + 120 }))), 'mandate_not_yet_valid', 'iat')
  })

  test('mandate_expired: iat older than maxAgeSeconds, exp passed', async () => {
    await refused(verify(await issue(closedMandate(), { iat: NOW_S - 601 })), 'mandate_expired', 'iat')
    await refused(verify(await issue(closedMandate(), { iat: NOW_S - 100 }), { maxAgeSeconds: 99 }), 'mandate_expired', 'iat')
    await refused(verify(await issue(closedMandate(), { exp: NOW_S })), 'mandate_expired', 'exp')
    await refused(verify(await issue(closedMandate({ exp: NOW_S - 1 }))), 'mandate_expired', 'exp')
    assert.ok(await verify(await issue(closedMandate(), { exp: NOW_S + 1 })))
  })

  test('mandate_malformed (members): transaction_id, payee, payment_amount, payment_instrument as the schema requires', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ transaction_id: undefined }, 'transaction_id'],
      [{ transaction_id: '' }, 'transaction_id'],
      [{ transaction_id: 7 }, 'transaction_id'],
      [{ payee: undefined }, 'payee'],
      [{ payee: { id: 'merchant_1' } }, 'payee'],
      [{ payee: { name: 'Demo Merchant' } }, 'payee'],
      [{ payee: 'merchant_1' }, 'payee'],
      [{ payment_amount: undefined }, 'payment_amount'],
      [{ payment_amount: [19900, 'USD'] }, 'payment_amount'],
      [{ payment_amount: { amount: 199.0001, currency: 'USD' } }, 'payment_amount.amount'],
      [{ payment_amount: { amount: '19900', currency: 'USD' } }, 'payment_amount.amount'],
      [{ payment_amount: { amount: -1, currency: 'USD' } }, 'payment_amount.amount'],
      [{ payment_amount: { currency: 'USD' } }, 'payment_amount.amount'],
      [{ payment_amount: { amount: 19900, currency: 'usd' } }, 'payment_amount.currency'],
      [{ payment_amount: { amount: 19900, currency: 'XYZ' } }, 'payment_amount.currency'],
      [{ payment_amount: { amount: 19900 } }, 'payment_amount.currency'],
      [{ payment_instrument: undefined }, 'payment_instrument'],
      [{ payment_instrument: { id: 'pi_1' } }, 'payment_instrument'],
      [{ payment_instrument: { type: 'card' } }, 'payment_instrument'],
    ]
    for (const [overrides, param] of cases) {
      const content = closedMandate(overrides)
      // The schema refuses each as well, but for what it leaves open: an empty id, a negative amount, the currency code's case and list.
      const schemaAllows = overrides.transaction_id === '' || (overrides.payment_amount as any)?.amount === -1 || (param === 'payment_amount.currency' && 'currency' in (overrides.payment_amount as object))
      assert.equal(validateClosed(JSON.parse(JSON.stringify(content))), schemaAllows, JSON.stringify(overrides))
      await refused(verify(await issue(content)), 'mandate_malformed', param)
    }
  })

  test('payment_amount_mismatch: the mandate\'s amount or currency is not the request\'s', async () => {
    const token = await issue()
    await refused(verify(token, { payment: { amount: 19901, currency: 'USD' } }), 'payment_amount_mismatch', 'amount')
    await refused(verify(token, { payment: { amount: 19900, currency: 'EUR' } }), 'payment_amount_mismatch', 'currency')
    await refused(verify(token, { payment: { amount: 0, currency: 'EUR' } }), 'payment_amount_mismatch', 'currency')
  })

  test('constraint_unsatisfied: a payee or instrument the open mandate does not allow; an empty list allows none', async () => {
    await refused(verify(await issue(closedMandate({ payee: { id: 'merchant_3', name: 'Demo Merchant' } }))), 'constraint_unsatisfied', 'payment.allowed_payees')
    await refused(verify(await issue(closedMandate({ payment_instrument: { id: 'pi_2', type: 'card' } }))), 'constraint_unsatisfied', 'payment.allowed_payment_instruments')
    await refused(verify(await issue(closedMandate({ payment_instrument: { id: 'pi_1', type: 'bank' } }))), 'constraint_unsatisfied', 'payment.allowed_payment_instruments')
    const token = await issue()
    await refused(verify(token, { open: { ...binding, allowed_payees: [] } }), 'constraint_unsatisfied', 'payment.allowed_payees')
    await refused(verify(token, { open: { ...binding, allowed_payment_instruments: [] } }), 'constraint_unsatisfied', 'payment.allowed_payment_instruments')
  })
})
