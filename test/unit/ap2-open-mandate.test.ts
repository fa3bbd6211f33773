import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { decodeSdJwt, unpack } from '@sd-jwt/decode'
import { digest } from '@sd-jwt/crypto-nodejs'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { compactVerify, importJWK } from 'jose'
import {
  type IssuerKey, OPEN_MANDATE_REFUSAL_CODES, OpenMandateRefusal, type OpenMandateRefusalCode, sha256Base64Url, verifyOpenPaymentMandate,
} from '../../src/modules/ap2/open-mandate.js'
import { CHAINED_PAYMENT_MANDATES, CLOSED_PAYMENT_MANDATE, OPEN_PAYMENT_MANDATE } from '../fixtures/ap2-payment-mandate-examples.js'
import { issueMandate, makeKey, openMandate, type TestKey } from '../helpers/ap2-issuer.js'

const SCHEMAS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared/protocols/ap2-v0.2')
const ajv = new Ajv2020({ strict: false, allErrors: true })
for (const dir of [SCHEMAS, path.join(SCHEMAS, 'types')]) {
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.json'))) ajv.addSchema(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')))
}
const validateOpen = ajv.getSchema('https://ap2-protocol.org/schemas/payment_mandate_open.json')!
const validateClosed = ajv.getSchema('https://ap2-protocol.org/schemas/payment_mandate.json')!

const NOW = new Date('2026-11-23T18:00:00.000Z')
const NOW_S = NOW.getTime() / 1000

let issuer: TestKey
let otherIssuer: TestKey
let agent: TestKey
let trusted: IssuerKey[]

const trust = (key: TestKey, overrides: Partial<IssuerKey> = {}): IssuerKey => ({
  id: `tk_${key.kid}`, kid: key.kid, role: 'trusted_agent_provider', status: 'active', public_jwk: key.publicJwk, ...overrides,
})

const verify = (token: string, keys = trusted, now = NOW) => verifyOpenPaymentMandate({ token, trustedKeys: keys, now })

async function refused(promise: Promise<unknown>, code: OpenMandateRefusalCode, param?: string) {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof OpenMandateRefusal, `not a refusal: ${String(err)}`)
    assert.equal(err.code, code, err.message)
    if (param !== undefined) assert.equal(err.param, param)
    return true
  })
}

const b64json = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
const parts = (token: string) => token.split('~')

before(async () => {
  issuer = await makeKey('issuer-1')
  otherIssuer = await makeKey('issuer-2')
  agent = await makeKey('agent-1')
  trusted = [trust(issuer), trust(otherIssuer, { role: 'user_credential_issuer' })]
})

describe('a valid open Payment Mandate', () => {
  test('verifies and maps every constraint to the draft; the content conforms to the AP2 schema', async () => {
    const content = openMandate(agent.publicJwk, NOW_S)
    const token = await issueMandate(issuer, content)
    const result = await verify(token)
    assert.ok(validateOpen(result.mandate), JSON.stringify(validateOpen.errors))
    assert.deepEqual(result.mandate, content)
    assert.deepEqual(result.issuer, { trusted_key_id: 'tk_issuer-1', kid: 'issuer-1', role: 'trusted_agent_provider' })
    assert.deepEqual(result.draft, {
      protocol: 'ap2',
      currency: 'USD',
      max_amount: 20000,
      min_amount: 100,
      budget_amount: 50000,
      max_uses: 12,
      recurrence: { frequency: 'MONTHLY', max_occurrences: 12, window: 'P1M' },
      usage: 'multi_use',
      not_before: '2026-01-01T00:00:00.000Z',
      // exp (an hour after iat) comes before execution_date.not_after
      expires_at: '2026-11-23T19:00:00.000Z',
      allowed_payees: [
        { id: 'merchant_1', name: 'Demo Merchant', website: 'https://demo-merchant.example' },
        { id: 'merchant_2', name: 'Other Merchant' },
      ],
      allowed_payment_instruments: [{ id: 'pi_1', type: 'card', description: 'Card 4242' }],
      payment_reference: 'FzLoxbbtgQGYZxoSM2NJYJtkFTSsdfUBoVEQ12k7JN8',
      cnf_jwk: { kty: 'EC', crv: 'P-256', x: agent.publicJwk.x, y: agent.publicJwk.y },
    })
    assert.equal(result.presentation_hash, sha256Base64Url(token))
    assert.equal(result.issuer_jwt_hash, sha256Base64Url(parts(token)[0]!))
    assert.equal(result.issued_at, NOW.toISOString())
  })

  test('the smallest mandate: one amount range, exp; budget defaults to the cap, single use from max_occurrences 1', async () => {
    const token = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, {
      constraints: [
        { type: 'payment.amount_range', currency: 'EUR', max: 999 },
        { type: 'payment.agent_recurrence', frequency: 'ON_DEMAND', max_occurrences: 1 },
        { type: 'payment.execution_date', not_after: '2026-11-23T18:30:00Z' },
      ],
    }))
    const { draft } = await verify(token)
    assert.equal(draft.currency, 'EUR')
    assert.equal(draft.max_amount, 999)
    assert.equal(draft.budget_amount, 999)
    assert.equal(draft.min_amount, null)
    assert.equal(draft.usage, 'single_use')
    assert.deepEqual(draft.recurrence, { frequency: 'ON_DEMAND', max_occurrences: 1, window: null })
    assert.equal(draft.expires_at, '2026-11-23T18:30:00.000Z', 'execution_date.not_after comes before exp')
    assert.equal(draft.allowed_payees, null)
  })

  test('a budget alone caps each payment too', async () => {
    const token = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, {
      constraints: [{ type: 'payment.budget', currency: 'JPY', max: 5000 }],
    }))
    const { draft } = await verify(token)
    assert.deepEqual([draft.currency, draft.max_amount, draft.budget_amount, draft.max_uses], ['JPY', 5000, 5000, null])
  })

  test('an Ed25519 issuer (user credential issuer) is accepted, and an Ed25519 cnf', async () => {
    const edIssuer = await makeKey('ed-issuer', 'EdDSA')
    const edAgent = await makeKey('ed-agent', 'EdDSA')
    const token = await issueMandate(edIssuer, openMandate(edAgent.publicJwk, NOW_S))
    const result = await verify(token, [trust(edIssuer, { role: 'user_credential_issuer' })])
    assert.equal(result.issuer.role, 'user_credential_issuer')
    assert.deepEqual(result.draft.cnf_jwk, { kty: 'OKP', crv: 'Ed25519', x: edAgent.publicJwk.x })
  })

  test('an RSA issuer (RS256) is accepted; RS256 under an EC key is not', async () => {
    const rsaIssuer = await makeKey('rsa-issuer', 'RS256')
    const token = await issueMandate(rsaIssuer, openMandate(agent.publicJwk, NOW_S))
    assert.equal((await verify(token, [trust(rsaIssuer)])).issuer.kid, 'rsa-issuer')
    await refused(verify(token, [trust(rsaIssuer, { public_jwk: { ...issuer.publicJwk, kid: 'rsa-issuer' } })]), 'issuer_untrusted', 'alg')
  })

  test('a presentation that withholds a payee disclosure keeps only the disclosed payees', async () => {
    const token = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S))
    const p = parts(token)
    const payee2 = p.findIndex((d, i) => i > 0 && d !== '' && JSON.parse(Buffer.from(d, 'base64url').toString())[1]?.id === 'merchant_2')
    assert.ok(payee2 > 0)
    const withheld = p.filter((_, i) => i !== payee2).join('~')
    const { draft } = await verify(withheld)
    assert.deepEqual(draft.allowed_payees?.map((m) => m.id), ['merchant_1'])
  })

  test('iat and exp on the issuer-signed payload count as well (the earliest exp wins)', async () => {
    const token = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, { exp: undefined }), { topLevel: { iat: NOW_S, exp: NOW_S + 60 } })
    assert.equal((await verify(token)).draft.expires_at, '2026-11-23T18:01:00.000Z')
    await refused(verify(token, trusted, new Date(NOW.getTime() + 60_000)), 'mandate_expired', 'exp')
  })
})

describe('refusals', () => {
  test('every refusal code is exercised below', () => {
    assert.equal(OPEN_MANDATE_REFUSAL_CODES.length, 11)
  })

  test('mandate_malformed: not an SD-JWT, a key-binding JWT attached, a bad header', async () => {
    const token = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S))
    await refused(verify(''), 'mandate_malformed')
    await refused(verify('not a token'), 'mandate_malformed')
    await refused(verify(parts(token)[0]!), 'mandate_malformed')
    await refused(verify(`${token}eyJhbGciOiJFUzI1NiJ9.e30.c2ln`), 'mandate_malformed')
    await refused(verify(token.slice(0, -1)), 'mandate_malformed')
    const [, payload, signature] = parts(token)[0]!.split('.')
    await refused(verify(`bm90IGpzb24.${payload}.${signature}~`), 'mandate_malformed')
  })

  test('issuer_untrusted: unknown kid, no kid, a revoked trusted key, an alg that does not fit the key', async () => {
    const stranger = await makeKey('stranger')
    await refused(verify(await issueMandate(stranger, openMandate(agent.publicJwk, NOW_S))), 'issuer_untrusted', 'kid')
    await refused(verify(await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S), { header: { kid: null } })), 'issuer_untrusted', 'kid')
    const token = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S))
    await refused(verify(token, [trust(issuer, { status: 'revoked' })]), 'issuer_untrusted', 'kid')
    await refused(verify(token, []), 'issuer_untrusted', 'kid')
    // The header claims EdDSA, the trusted key is P-256: no algorithm confusion.
    const [h, p, s] = parts(token)[0]!.split('.')
    const header = JSON.parse(Buffer.from(h!, 'base64url').toString())
    const confused = [`${b64json({ ...header, alg: 'EdDSA' })}.${p}.${s}`, ...parts(token).slice(1)].join('~')
    await refused(verify(confused), 'issuer_untrusted', 'alg')
    const none = [`${b64json({ ...header, alg: 'none' })}.${p}.${s}`, ...parts(token).slice(1)].join('~')
    await refused(verify(none), 'issuer_untrusted', 'alg')
  })

  test('mandate_signature_invalid: signed by another key under a trusted kid, or a changed payload', async () => {
    const impostor = { ...(await makeKey('issuer-1')) }
    await refused(verify(await issueMandate(impostor, openMandate(agent.publicJwk, NOW_S))), 'mandate_signature_invalid')
    // The right key, but the trusted entry of that kid holds another public key.
    const token = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S))
    await refused(verify(token, [trust(issuer, { public_jwk: otherIssuer.publicJwk })]), 'mandate_signature_invalid')
    const [h, , s] = parts(token)[0]!.split('.')
    const forged = [`${h}.${b64json({ delegate_payload: [openMandate(agent.publicJwk, NOW_S)], _sd_alg: 'sha-256' })}.${s}`, ...parts(token).slice(1)].join('~')
    await refused(verify(forged), 'mandate_signature_invalid')
  })

  test('disclosure_invalid: a tampered disclosure, a foreign one, a duplicate, an undecodable one, another _sd_alg', async () => {
    const token = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S))
    const p = parts(token)
    const mandateAt = p.findIndex((d, i) => i > 0 && d !== '' && JSON.parse(Buffer.from(d, 'base64url').toString())[1]?.vct)
    const [salt, content] = JSON.parse(Buffer.from(p[mandateAt]!, 'base64url').toString())
    // Raise the cap in the mandate disclosure: its digest no longer matches the signed one.
    const raised = { ...content, constraints: content.constraints.map((c: any) => (c.type === 'payment.amount_range' ? { ...c, max: 9_999_999 } : c)) }
    const tampered = p.map((d, i) => (i === mandateAt ? b64json([salt, raised]) : d)).join('~')
    await refused(verify(tampered), 'disclosure_invalid')
    // A payee added by the holder, in a disclosure the issuer never signed a digest for.
    const foreign = [...p.slice(0, -1), b64json(['c2FsdHNhbHRzYWx0', { id: 'evil', name: 'Evil Merchant' }]), ''].join('~')
    await refused(verify(foreign), 'disclosure_invalid')
    const duplicate = [...p.slice(0, -1), p[mandateAt], ''].join('~')
    await refused(verify(duplicate), 'disclosure_invalid')
    const garbage = [...p.slice(0, -1), 'bm90LWpzb24', ''].join('~')
    await refused(verify(garbage), 'disclosure_invalid')
    const sha512 = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S), { hashAlg: 'sha-512' })
    await refused(verify(sha512), 'disclosure_invalid', '_sd_alg')
  })

  test('mandate_type_unsupported: the mandate disclosure withheld, or another vct', async () => {
    const token = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S), { discloseAllowed: false })
    await refused(verify(`${parts(token)[0]}~`), 'mandate_type_unsupported', 'vct')
    const closed = await issueMandate(issuer, { ...openMandate(agent.publicJwk, NOW_S), vct: 'mandate.payment.1' })
    await refused(verify(closed), 'mandate_type_unsupported', 'vct')
    const older = await issueMandate(issuer, { ...openMandate(agent.publicJwk, NOW_S), vct: 'mandate.payment.open' })
    await refused(verify(older), 'mandate_type_unsupported', 'vct')
  })

  test('mandate_expired and mandate_not_yet_valid, with the injected clock', async () => {
    const token = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S))
    await refused(verify(token, trusted, new Date(NOW.getTime() + 3600_000)), 'mandate_expired', 'exp')
    assert.ok(await verify(token, trusted, new Date(NOW.getTime() + 3599_000)))
    await refused(verify(token, trusted, new Date(NOW.getTime() - 61_000)), 'mandate_not_yet_valid', 'iat')
    assert.ok(await verify(token, trusted, new Date(NOW.getTime() - 59_000)), 'a minute of leeway for clocks')
    const lapsed = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, {
      constraints: [{ type: 'payment.amount_range', currency: 'USD', max: 100 }, { type: 'payment.execution_date', not_after: '2026-11-23T17:00:00Z' }],
    }))
    await refused(verify(lapsed), 'mandate_expired', 'payment.execution_date')
    const badIat = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, { iat: 'yesterday' }))
    await refused(verify(badIat), 'mandate_malformed', 'iat')
  })

  test('cnf_invalid: missing, a private key, RSA, an off-curve point', async () => {
    await refused(verify(await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, { cnf: undefined }))), 'cnf_invalid', 'cnf')
    await refused(verify(await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, { cnf: { kid: 'agent-1' } }))), 'cnf_invalid', 'cnf')
    await refused(verify(await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, { cnf: { jwk: agent.privateJwk } }))), 'cnf_invalid', 'cnf.jwk.d')
    await refused(verify(await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, { cnf: { jwk: { kty: 'RSA', n: 'AQAB', e: 'AQAB' } } }))), 'cnf_invalid', 'cnf.jwk')
    const offCurve = { kty: 'EC', crv: 'P-256', x: agent.publicJwk.x, y: otherIssuer.publicJwk.y }
    await refused(verify(await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, { cnf: { jwk: offCurve } }))), 'cnf_invalid', 'cnf.jwk')
  })

  test('constraint_unsupported: an unknown constraint type fails (AP2: MUST), and allowed_pisps, which Wishpay cannot evaluate', async () => {
    const base = openMandate(agent.publicJwk, NOW_S)
    const unknown = await issueMandate(issuer, { ...base, constraints: [...(base.constraints as unknown[]), { type: 'com.example.loyalty_points', min: 10 }] })
    await refused(verify(unknown), 'constraint_unsupported', 'com.example.loyalty_points')
    const pisps = await issueMandate(issuer, { ...base, constraints: [...(base.constraints as unknown[]), { type: 'payment.allowed_pisps', allowed: [{ legal_name: 'X', brand_name: 'X', domain_name: 'x.example' }] }] })
    await refused(verify(pisps), 'constraint_unsupported', 'payment.allowed_pisps')
  })

  test('constraint_invalid: amounts not integer minor units, mixed currencies, inverted ranges, bad dates and frequencies', async () => {
    const cases: Array<[unknown[], string]> = [
      [[{ type: 'payment.budget', currency: 'USD', max: 1000.5 }], 'payment.budget'],
      [[{ type: 'payment.amount_range', currency: 'USD', max: -1 }], 'payment.amount_range'],
      [[{ type: 'payment.amount_range', currency: 'USD', max: 0 }], 'payment.amount_range'],
      [[{ type: 'payment.amount_range', currency: 'USD', max: 100, min: 200 }], 'payment.amount_range'],
      [[{ type: 'payment.amount_range', currency: 'usd', max: 100 }], 'payment.amount_range'],
      [[{ type: 'payment.amount_range', currency: 'XYZ', max: 100 }], 'payment.amount_range'],
      [[{ type: 'payment.amount_range', currency: 'USD', max: 100 }, { type: 'payment.budget', currency: 'EUR', max: 500 }], 'payment.budget'],
      [[{ type: 'payment.amount_range', currency: 'USD', max: 100 }, { type: 'payment.amount_range', currency: 'USD', max: 50 }], 'payment.amount_range'],
      [[{ type: 'payment.amount_range', currency: 'USD', max: 100 }, { type: 'payment.agent_recurrence', frequency: 'HOURLY' }], 'payment.agent_recurrence'],
      [[{ type: 'payment.amount_range', currency: 'USD', max: 100 }, { type: 'payment.agent_recurrence', frequency: 'DAILY', max_occurrences: 0 }], 'payment.agent_recurrence'],
      [[{ type: 'payment.amount_range', currency: 'USD', max: 100 }, { type: 'payment.execution_date', not_before: 'soon' }], 'payment.execution_date'],
      [[{ type: 'payment.amount_range', currency: 'USD', max: 100 }, { type: 'payment.execution_date', not_before: '2027-01-02T00:00:00Z', not_after: '2027-01-01T00:00:00Z' }], 'payment.execution_date'],
      [[{ type: 'payment.amount_range', currency: 'USD', max: 100 }, { type: 'payment.allowed_payees', allowed: [{ id: 'm' }] }], 'payment.allowed_payees'],
      [[{ type: 'payment.amount_range', currency: 'USD', max: 100 }, { type: 'payment.allowed_payment_instruments', allowed: 'card' }], 'payment.allowed_payment_instruments'],
      [[{ type: 'payment.amount_range', currency: 'USD', max: 100 }, { type: 'payment.reference' }], 'payment.reference'],
      [[{ kind: 'payment.amount_range' }], 'constraints'],
    ]
    for (const [constraints, param] of cases) {
      const token = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, { constraints }), { discloseAllowed: false })
      await refused(verify(token), 'constraint_invalid', param)
    }
  })

  test('mandate_unbounded: no amount constraint, or no end', async () => {
    const noCap = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, { constraints: [{ type: 'payment.agent_recurrence', frequency: 'DAILY' }] }))
    await refused(verify(noCap), 'mandate_unbounded', 'constraints')
    const noEnd = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, { exp: undefined, constraints: [{ type: 'payment.amount_range', currency: 'USD', max: 100 }] }))
    await refused(verify(noEnd), 'mandate_unbounded', 'exp')
  })
})

const disclosed = (d: string) => JSON.parse(Buffer.from(d, 'base64url').toString()) as unknown[]
const isAllowedItem = (d: string) => {
  const value = disclosed(d).at(-1) as Record<string, unknown>
  return disclosed(d).length === 2 && typeof value?.id === 'string' && (typeof value.name === 'string' || typeof value.type === 'string')
}

describe('withheld disclosures (review of issue 14, item 3)', () => {
  test('selectively disclosable constraints verify in full, and withholding any of them (or a member) is refused', async () => {
    const content = openMandate(agent.publicJwk, NOW_S)
    const token = await issueMandate(issuer, content, { discloseConstraints: true })
    const full = await verify(token)
    assert.deepEqual(full.mandate, content)
    assert.equal(full.draft.max_uses, 12)
    const p = parts(token)
    let withheldRefused = 0
    for (let i = 1; i < p.length - 1; i++) {
      const withheld = p.filter((_, j) => j !== i).join('~')
      if (isAllowedItem(p[i]!)) {
        assert.ok(await verify(withheld), 'a payee or instrument may be withheld')
      } else {
        withheldRefused += 1
        await refused(verify(withheld), 'disclosure_invalid')
      }
    }
    // The seven constraints, the budget's max, and the mandate (whose presented disclosures are then unreachable).
    assert.equal(withheldRefused, 9)
  })

  test('withholding every payee leaves an empty list, which allows no payee (not an unconstrained mandate)', async () => {
    const token = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S))
    const p = parts(token)
    const withheld = p.filter((d, i) => i === 0 || d === '' || !(isAllowedItem(d) && typeof (disclosed(d)[1] as any).name === 'string')).join('~')
    const { draft } = await verify(withheld)
    assert.deepEqual(draft.allowed_payees, [])
    assert.equal(draft.allowed_payment_instruments?.length, 1)
    const empty = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, {
      constraints: [{ type: 'payment.amount_range', currency: 'USD', max: 100 }, { type: 'payment.allowed_payment_instruments', allowed: [] }],
    }))
    assert.deepEqual((await verify(empty)).draft.allowed_payment_instruments, [])
  })

  test('a 10,000-deep extra disclosure, or a signed mandate nested too deep, is a named refusal', async () => {
    const token = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S))
    const n = 10_000
    const deep = Buffer.from(`["c2FsdHNhbHRzYWx0",${'['.repeat(n)}${']'.repeat(n)}]`).toString('base64url')
    await refused(verify([...parts(token).slice(0, -1), deep, ''].join('~')), 'disclosure_invalid')
    let nested: unknown = 'bottom'
    for (let i = 0; i < 100; i++) nested = [nested]
    const signedDeep = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, { note: nested }))
    await refused(verify(signedDeep), 'mandate_malformed')
  })
})

describe('times, dates and algorithms (review of issue 14, item 3)', () => {
  test('iat and exp beyond a safe Unix time are mandate_malformed, not a crash', async () => {
    for (const [name, value] of [['exp', 1e300], ['exp', -1e300], ['iat', 1e300], ['iat', -1e300], ['exp', 253402300800], ['iat', -1]] as const) {
      const token = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, { [name]: value }))
      await refused(verify(token), 'mandate_malformed', name)
      const top = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S), { topLevel: { [name]: value } })
      await refused(verify(top), 'mandate_malformed', name)
    }
  })

  test('a future nbf is mandate_not_yet_valid; a past one is fine', async () => {
    await refused(verify(await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, { nbf: NOW_S + 600 }))), 'mandate_not_yet_valid', 'nbf')
    await refused(verify(await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S), { topLevel: { nbf: NOW_S + 600 } })), 'mandate_not_yet_valid', 'nbf')
    assert.ok(await verify(await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, { nbf: NOW_S - 600 }))))
    await refused(verify(await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, { nbf: 'now' }))), 'mandate_malformed', 'nbf')
  })

  test('execution dates: only RFC 3339 date-times with Z or an offset', async () => {
    for (const bad of ['2027-01-01', '2027-01-01T00:00:00', '2027-01-01 00:00:00Z', 'Jan 1 2027 00:00:00 GMT', '2027-01-01T00:00:00+0100', '2027-02-30T00:00:00Z', '2027-01-01T24:00:00Z', '+002027-01-01T00:00:00Z', 1798761600000]) {
      const token = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, {
        constraints: [{ type: 'payment.amount_range', currency: 'USD', max: 100 }, { type: 'payment.execution_date', not_after: bad }],
      }))
      await refused(verify(token), 'constraint_invalid', 'payment.execution_date')
    }
    const offset = await issueMandate(issuer, openMandate(agent.publicJwk, NOW_S, {
      constraints: [{ type: 'payment.amount_range', currency: 'USD', max: 100 }, { type: 'payment.execution_date', not_before: '2026-11-23T20:30:00.5+02:00', not_after: '2026-11-23T18:45:00z' }],
    }))
    const { draft } = await verify(offset)
    assert.deepEqual([draft.not_before, draft.expires_at], ['2026-11-23T18:30:00.500Z', '2026-11-23T18:45:00.000Z'])
  })

  test('a trusted key with public_jwk.alg accepts that algorithm only', async () => {
    const rsaIssuer = await makeKey('rsa-alg', 'RS256')
    const token = await issueMandate(rsaIssuer, openMandate(agent.publicJwk, NOW_S))
    assert.ok(await verify(token, [trust(rsaIssuer, { public_jwk: { ...rsaIssuer.publicJwk, alg: 'RS256' } })]))
    await refused(verify(token, [trust(rsaIssuer, { public_jwk: { ...rsaIssuer.publicJwk, alg: 'PS256' } })]), 'issuer_untrusted', 'alg')
    const edIssuer = await makeKey('ed-alg', 'EdDSA')
    const edToken = await issueMandate(edIssuer, openMandate(agent.publicJwk, NOW_S))
    assert.ok(await verify(edToken, [trust(edIssuer, { public_jwk: { ...edIssuer.publicJwk, alg: 'EdDSA' } })]))
    await refused(verify(edToken, [trust(edIssuer, { public_jwk: { ...edIssuer.publicJwk, alg: 'Ed25519' } })]), 'issuer_untrusted', 'alg')
  })
})

describe('the encoded examples of AP2 payment_mandate.md', () => {
  test('decode, conform to the schemas, and chain: sd_hash, the cnf key, the digests', async () => {
    const open = await decodeSdJwt(OPEN_PAYMENT_MANDATE, digest)
    assert.deepEqual(open.jwt.header, { alg: 'ES256', typ: 'example+sd-jwt', kid: 'agent-provider-key-1' })
    const openClaims = (await unpack(open.jwt.payload, open.disclosures, digest)).unpackedObj as any
    const openMandateContent = openClaims.delegate_payload[0]
    assert.ok(validateOpen(openMandateContent), JSON.stringify(validateOpen.errors))
    assert.deepEqual(open.disclosures.map((d) => d._digest), ['oEH7i1gyb-zn6awwjy57LvzxkQDfD-8tvlC2XuIkgOA', '3YRtZ-lBNhI_YhggShrdHhrSuDPSpwMvJ3VWjUnhDQM'])

    const closed = await decodeSdJwt(CLOSED_PAYMENT_MANDATE, digest)
    assert.equal(closed.jwt.header.typ, 'kb+sd-jwt')
    const closedClaims = (await unpack(closed.jwt.payload, closed.disclosures, digest)).unpackedObj as any
    const closedContent = closedClaims.delegate_payload[0]
    assert.ok(validateClosed(closedContent), JSON.stringify(validateClosed.errors))

    // The closed mandate's sd_hash is the hash of the open mandate as presented (jwt~disclosures~).
    assert.equal(closed.jwt.payload.sd_hash, sha256Base64Url(OPEN_PAYMENT_MANDATE))
    assert.equal(closed.jwt.payload.sd_hash, 'uixoHemmfrrCSbPREo9j-ziLuMkqExsPeWrwA-PK0Ck')
    // The closed mandate is signed by the agent key the open one binds in cnf.
    const cnfKey = await importJWK(openMandateContent.cnf.jwk, 'ES256')
    await compactVerify(CLOSED_PAYMENT_MANDATE.split('~')[0]!, cnfKey, { algorithms: ['ES256'] })
    // The chained form is open~ then ~ then closed.
    assert.equal(CHAINED_PAYMENT_MANDATES, `${OPEN_PAYMENT_MANDATE}~${CLOSED_PAYMENT_MANDATE}`)
    // And the closed mandate satisfies the open one's constraints.
    const range = openMandateContent.constraints.find((c: any) => c.type === 'payment.amount_range')
    assert.ok(closedContent.payment_amount.amount <= range.max && closedContent.payment_amount.currency === range.currency)
    const payees = openMandateContent.constraints.find((c: any) => c.type === 'payment.allowed_payees').allowed
    assert.deepEqual(payees, [closedContent.payee])
  })

  test('the example open mandate: the issuer key is unpublished, so another key under its kid fails the signature', async () => {
    const lookalike = await makeKey('agent-provider-key-1')
    await refused(verify(OPEN_PAYMENT_MANDATE, [trust(lookalike)]), 'mandate_signature_invalid')
    await refused(verify(OPEN_PAYMENT_MANDATE, trusted), 'issuer_untrusted', 'kid')
    // The chained form carries a key-binding part: it is not an open mandate.
    await refused(verify(CHAINED_PAYMENT_MANDATES, [trust(lookalike)]), 'mandate_malformed')
  })
})
