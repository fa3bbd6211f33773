import assert from 'node:assert/strict'
import { generateKeyPairSync, randomUUID, sign as sign_ } from 'node:crypto'
import canonicalize from 'canonicalize'
import fs from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import Ajv2020 from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { storeKinds } from '../helpers/stores.js'
import { assertPaymentError } from '../helpers/assertions.js'
import type { Response } from '../helpers/response.js'

/**
 * ACP's Delegate Payment API against the server (issue 15, items 1-3): the official examples, ACP's
 * headers, flat errors and idempotency rules, every request and answer checked against the official
 * JSON Schema, and no card number or CVC kept.
 */
const ACP = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared/protocols/acp-2026-04-17')
const schema = JSON.parse(fs.readFileSync(path.join(ACP, 'schema.delegate_payment.json'), 'utf8'))
const examples = JSON.parse(fs.readFileSync(path.join(ACP, 'examples.delegate_payment.json'), 'utf8'))
const ajv = new (Ajv2020 as unknown as typeof Ajv2020.default)({ strict: false, allErrors: true })
;(addFormats as unknown as typeof addFormats.default)(ajv)
ajv.addSchema(schema, 'acp')
const def = (name: string) => ajv.getSchema(`acp#/$defs/${name}`) ?? ajv.compile({ $ref: `acp#/definitions/${name}` })
const validRequest = def('DelegatePaymentRequest')
const validResponse = def('DelegatePaymentResponse')
/**
 * The official Error schema's type and code enums leave out what the RFC and the OpenAPI document name
 * themselves (401 `unauthorized`, 2.1's API version codes) and any error outside the card; Wishpay's
 * extra codes are documented (docs/decisions.md, "ACP"). Shape: the official schema without the enums;
 * type and code: the official enum or that documented list.
 */
const officialError = schema.$defs?.Error ?? schema.definitions?.Error
const EXTRA_TYPES = ['unauthorized']
const EXTRA_CODES = ['unauthorized', 'missing_api_version', 'unsupported_api_version', 'invalid_request', 'invalid_allowance', 'invalid_parent_mandate']
const shapeOnly = ajv.compile({ ...officialError, properties: { ...officialError.properties, type: { type: 'string' }, code: { type: 'string' } } })
const validError = Object.assign((body: { type: string, code: string }): boolean => {
  const shaped = shapeOnly(structuredClone(body))
  return shaped && [...officialError.properties.type.enum, ...EXTRA_TYPES].includes(body.type)
    && [...officialError.properties.code.enum, ...EXTRA_CODES].includes(body.code)
}, { get errors() { return shapeOnly.errors } })

const PATH = '/agentic_commerce/delegate_payment'
const VERSION = '2026-04-17'

/** The official request, its allowance moved into the future and its card kept unexpired (the example's dates have passed). */
function officialRequest(now: Date): any {
  const body = structuredClone(examples.delegate_payment_request)
  body.allowance.expires_at = new Date(now.getTime() + 3600_000).toISOString()
  body.payment_method.exp_year = String(now.getUTCFullYear() + 2)
  return body
}

for (const kind of storeKinds()) {
  describe(`ACP delegate_payment (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    function delegate(a: TestAccount, body: unknown, headers: Record<string, string | undefined> = {}): Promise<Response> {
      const all: Record<string, string> = {}
      for (const [k, v] of Object.entries({ 'api-version': VERSION, 'idempotency-key': randomUUID(), ...headers })) if (v !== undefined) all[k] = v
      return a.request('POST', PATH, body, { headers: all })
    }

    function assertAcpError(res: Response, status: number, type: string, code: string, param?: string): void {
      assert.equal(res.status, status, res.raw)
      assert.equal(res.body.type, type, res.raw)
      assert.equal(res.body.code, code, res.raw)
      assert.equal(res.body.error, undefined, 'no Wishpay envelope on an ACP route')
      if (param !== undefined) assert.equal(res.body.param, param)
      assert.equal(res.headers['api-version'], VERSION)
      assert.ok(res.headers['request-id'])
    }

    test('the official request: 201 with id, created and metadata echoing merchant_id and idempotency_key; valid against the schema', async () => {
      const a = await t.account()
      const body = officialRequest(t.clock.now())
      assert.ok(validRequest(body), JSON.stringify(validRequest.errors))
      const key = randomUUID()
      const res = await delegate(a, body, { 'idempotency-key': key })
      assert.equal(res.status, 201, res.raw)
      assert.ok(validResponse(res.body), JSON.stringify(validResponse.errors))
      assert.match(res.body.id, /^vt_/)
      assert.deepEqual(Object.keys(res.body).sort(), ['created', 'id', 'metadata'])
      assert.deepEqual(res.body.metadata, { ...body.metadata, merchant_id: 'acme_store', idempotency_key: key })
      assert.equal(res.headers['api-version'], VERSION)
      // Same key, same body: the same answer, replayed.
      const again = await delegate(a, body, { 'idempotency-key': key })
      assert.equal(again.status, 201)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(again.raw, res.raw)
      // Same key, another body: 422 idempotency_conflict, as the official example.
      const other = await delegate(a, { ...body, metadata: { campaign: 'q1' } }, { 'idempotency-key': key })
      assertAcpError(other, 422, 'invalid_request', 'idempotency_conflict')
      assert.deepEqual(other.body, examples.delegate_payment_error_idempotency_conflict)
      // The key is scoped to the path: the same key elsewhere is another key.
      const wish = await a.request('POST', '/wishes', { query: 'a kettle' }, { headers: { 'idempotency-key': key } })
      assert.equal(wish.status, 201, wish.raw)
    })

    test('the vault token keeps the card\'s display fields and a fingerprint, never the number or the CVC', async () => {
      const a = await t.account()
      const body = officialRequest(t.clock.now())
      const res = await delegate(a, body)
      const token = await a.request('GET', `/vault_tokens/${res.body.id}`)
      assert.equal(token.status, 200, token.raw)
      const v = token.body.data
      assert.equal(v.status, 'active')
      const { merchant_id: _m, checkout_session_id: _c, ...allowance } = body.allowance
      assert.deepEqual(v.allowance, allowance)
      assert.equal(v.merchant_id, 'acme_store')
      assert.equal(v.checkout_session_id, 'csn_01HV3P3XYZ9ABC')
      assert.equal(v.card.brand, 'visa')
      assert.equal(v.card.last4, '4242')
      assert.match(v.card.fingerprint, /^[A-Za-z0-9_-]{43}$/)
      const mandate = (await a.request('GET', `/mandates/${v.mandate_id}`)).body.data
      assert.deepEqual([mandate.protocol, mandate.usage, mandate.max_amount, mandate.currency, mandate.expires_at],
        ['acp', 'single_use', 2000, 'USD', new Date(body.allowance.expires_at).toISOString()])
      // Nothing stored anywhere holds the number or the CVC.
      for (const table of ['vault_tokens', 'mandates', 'events', 'idempotency_keys'] as const) {
        const rows = JSON.stringify(await t.store.db.kysely.selectFrom(table).selectAll().execute())
        assert.ok(!rows.includes('4242424242424242'), `${table} holds the card number`)
        assert.ok(!/"cvc"|\b223\b/.test(rows.replace(/"score":\s*\d+/g, '')) || !rows.includes('"223"'), `${table} holds the CVC`)
      }
      // The same card fingerprints the same; another does not.
      const twice = (await a.request('GET', `/vault_tokens/${(await delegate(a, body)).body.id}`)).body.data
      assert.equal(twice.card.fingerprint, v.card.fingerprint)
      const other = officialRequest(t.clock.now())
      other.payment_method.number = '5555555555554444'
      const third = (await a.request('GET', `/vault_tokens/${(await delegate(a, other)).body.id}`)).body.data
      assert.notEqual(third.card.fingerprint, v.card.fingerprint)
    })

    test('headers: API-Version missing or unknown is 400 with supported_versions; Idempotency-Key missing is 400 as the official example', async () => {
      const a = await t.account()
      const body = officialRequest(t.clock.now())
      const missing = await delegate(a, body, { 'api-version': undefined })
      assertAcpError(missing, 400, 'invalid_request', 'missing_api_version')
      assert.deepEqual(missing.body.supported_versions, [VERSION])
      const unknown = await delegate(a, body, { 'api-version': '2025-01-01' })
      assertAcpError(unknown, 400, 'invalid_request', 'unsupported_api_version')
      const noKey = await delegate(a, body, { 'idempotency-key': undefined })
      assertAcpError(noKey, 400, 'invalid_request', 'idempotency_key_required')
      assert.deepEqual(noKey.body, examples.delegate_payment_error_idempotency_key_required)
      // Unauthenticated: ACP's 401.
      const anonymous = await t.inject({ method: 'POST', url: PATH, payload: body, headers: { 'api-version': VERSION, 'idempotency-key': randomUUID() } })
      assertAcpError(anonymous, 401, 'unauthorized', 'unauthorized')
      for (const res of [missing, unknown, noKey, anonymous]) assert.ok(validError(res.body) || res.body.supported_versions, JSON.stringify(validError.errors))
    })

    test('refusals: invalid card number (the official example), bad expiry, unknown members, missing members, a past allowance', async () => {
      const a = await t.account()
      const now = t.clock.now()
      const badNumber = officialRequest(now)
      badNumber.payment_method.number = '4242424242424241'
      const res = await delegate(a, badNumber)
      assertAcpError(res, 422, 'invalid_request', 'invalid_card', '$.payment_method.number')
      assert.equal(res.body.message, examples.delegate_payment_error_invalid_card.message)
      const month = officialRequest(now)
      month.payment_method.exp_month = '13'
      assertAcpError(await delegate(a, month), 422, 'invalid_request', 'invalid_card', '$.payment_method.exp_month')
      const unknownMember = { ...officialRequest(now), extra: true }
      const unknownRes = await delegate(a, unknownMember)
      assert.equal(unknownRes.status, 400, unknownRes.raw)
      assert.equal(unknownRes.body.type, 'invalid_request')
      const { allowance: _a, ...noAllowance } = officialRequest(now)
      const missing = await delegate(a, noAllowance)
      assert.equal(missing.status, 400)
      assert.match(missing.body.param, /^\$\.?/)
      const past = officialRequest(now)
      past.allowance.expires_at = '2020-01-01T00:00:00Z'
      assertAcpError(await delegate(a, past), 422, 'invalid_request', 'invalid_allowance', '$.allowance.expires_at')
      for (const r of [res, unknownRes, missing]) assert.ok(validError(r.body), JSON.stringify(validError.errors))
      // Nothing was made.
      const count = await t.store.db.kysely.selectFrom('vault_tokens').select('id').where('account_id', '=', a.id).execute()
      assert.equal(count.length, 0)
    })

    test('a vault token can be revoked, once', async () => {
      const a = await t.account()
      const made = await delegate(a, officialRequest(t.clock.now()))
      const revoked = await a.request('POST', `/vault_tokens/${made.body.id}/revoke`, {})
      assert.equal(revoked.status, 200, revoked.raw)
      assert.equal(revoked.body.data.status, 'revoked')
      assert.equal((await a.request('POST', `/vault_tokens/${made.body.id}/revoke`, {})).status, 409)
      assert.equal((await a.request('GET', '/vault_tokens/vt_unknown')).status, 404)
      const b = await t.account()
      assert.equal((await b.request('GET', `/vault_tokens/${made.body.id}`)).status, 404)
    })

    /** POST /payments with a vault token, as the merchant's PSP would redeem it. */
    const redeem = (a: TestAccount, token: string, body: Record<string, unknown> = {}) => a.request('POST', '/payments', {
      vault_token: token, merchant_id: 'acme_store', checkout_session_id: 'csn_01HV3P3XYZ9ABC', amount: 1500, currency: 'usd', idempotency_key: randomUUID(), ...body,
    })

    test('a vault token pays once, within its allowance, for its merchant and session only', async () => {
      const a = await t.account()
      const token = (await delegate(a, officialRequest(t.clock.now()))).body.id
      assertPaymentError(await redeem(a, token, { merchant_id: 'another_store' }), 'vault_token_merchant_mismatch')
      assertPaymentError(await redeem(a, token, { checkout_session_id: 'csn_other' }), 'vault_token_session_mismatch')
      assertPaymentError(await redeem(a, token, { amount: 2001 }), 'amount_exceeds_mandate')
      assertPaymentError(await redeem(a, token, { currency: 'eur' }), 'currency_mismatch')
      assertPaymentError(await redeem(a, 'vt_unknown'), 'vault_token_not_found')
      const both = await redeem(a, token, { mandate_id: 'mdt_x' })
      assert.equal(both.status, 400, both.raw)
      const paid = await redeem(a, token)
      assert.equal(paid.status, 201, paid.raw)
      assert.equal(paid.body.data.protocol_type, 'acp')
      assert.equal(paid.body.data.currency, 'USD')
      assertPaymentError(await redeem(a, token), 'mandate_consumed')
      assert.equal((await a.request('GET', `/vault_tokens/${token}`)).body.data.status, 'consumed')
      // Another account cannot see it.
      assertPaymentError(await redeem(await t.account(), token), 'vault_token_not_found')
    })

    test('an expired or revoked vault token pays nothing', async () => {
      const a = await t.account()
      const revoked = (await delegate(a, officialRequest(t.clock.now()))).body.id
      await a.request('POST', `/vault_tokens/${revoked}/revoke`, {})
      assertPaymentError(await redeem(a, revoked), 'mandate_revoked')
      const lapsing = (await delegate(a, officialRequest(t.clock.now()))).body.id
      t.clock.advance(3601_000)
      assertPaymentError(await redeem(a, lapsing), 'mandate_expired')
    })

    test('30 concurrent redemptions of one vault token: exactly one pays', async () => {
      const a = await t.account()
      const token = (await delegate(a, officialRequest(t.clock.now()))).body.id
      const answers = await Promise.all(Array.from({ length: 30 }, () => redeem(a, token)))
      assert.equal(answers.filter((r) => r.status === 201).length, 1)
      for (const r of answers.filter((x) => x.status !== 201)) assertPaymentError(r, 'mandate_consumed')
      const paid = await t.store.db.kysely.selectFrom('payments').select('id').where('account_id', '=', a.id).execute()
      assert.equal(paid.length, 1)
    })

    test('a vault token made under a Wishpay mandate also draws on its budget, atomically', async () => {
      const a = await t.account()
      const parent = await a.request('POST', '/mandates', { protocol: 'acp', max_amount: 2000, budget_amount: 3000, usage: 'multi_use', expires_at: '2099-01-01T00:00:00Z' })
      assert.equal(parent.status, 201, parent.raw)
      const under = (n: number) => {
        const body = officialRequest(t.clock.now())
        body.metadata = { ...body.metadata, wishpay_mandate_id: parent.body.data.id }
        body.allowance.checkout_session_id = `csn_${n}`
        return delegate(a, body)
      }
      // A declined payment gives back what it held, on the token and on the parent.
      const declinedToken = (await under(0)).body.id
      const declined = await redeem(a, declinedToken, { checkout_session_id: 'csn_0', amount: 500, payment_method: 'test_card_declined' })
      assert.equal(declined.body.data.status, 'failed', declined.raw)
      assert.equal((await a.request('GET', `/mandates/${parent.body.data.id}`)).body.data.amount_used, 0)
      assert.equal((await a.request('GET', `/vault_tokens/${declinedToken}`)).body.data.status, 'active')
      const tokens = await Promise.all([1, 2, 3, 4].map(async (n) => ({ n, id: (await under(n)).body.id })))
      const answers = await Promise.all(tokens.map(({ n, id }) => redeem(a, id, { checkout_session_id: `csn_${n}`, amount: 1500 })))
      assert.equal(answers.filter((r) => r.status === 201).length, 2)
      for (const r of answers.filter((x) => x.status !== 201)) assertPaymentError(r, 'mandate_budget_exceeded')
      const read = (await a.request('GET', `/mandates/${parent.body.data.id}`)).body.data
      assert.equal(read.amount_used, 3000)
      const wrongParent = officialRequest(t.clock.now())
      wrongParent.metadata = { wishpay_mandate_id: 'mdt_nope' }
      assertAcpError(await delegate(a, wrongParent), 422, 'invalid_request', 'invalid_parent_mandate', '$.metadata.wishpay_mandate_id')
    })

    test('with an ACP client key registered, requests must be signed: Ed25519 over the RFC 8785 body, Timestamp within 5 minutes', async () => {
      const a = await t.account()
      const { publicKey, privateKey } = generateKeyPairSync('ed25519')
      const registered = await a.request('POST', '/trusted_keys', { role: 'acp_client', public_jwk: { ...publicKey.export({ format: 'jwk' }), kid: 'chatgpt-1' } })
      assert.equal(registered.status, 201, registered.raw)
      const body = officialRequest(t.clock.now())
      const sign = (b: unknown) => sign_(null, Buffer.from(canonicalize(b)!), privateKey).toString('base64url')
      const now = () => t.clock.now().toISOString()
      assertAcpError(await delegate(a, body), 401, 'unauthorized', 'missing_signature')
      assertAcpError(await delegate(a, body, { signature: sign({ ...body, metadata: {} }), timestamp: now() }), 401, 'unauthorized', 'invalid_signature')
      const stale = new Date(t.clock.now().getTime() - 6 * 60_000).toISOString()
      assertAcpError(await delegate(a, body, { signature: sign(body), timestamp: stale }), 401, 'unauthorized', 'timestamp_out_of_window')
      // Member order does not matter: the signature is over the canonical JSON.
      const reordered = Object.fromEntries(Object.entries(body).reverse())
      const ok = await delegate(a, reordered, { signature: sign(body), timestamp: now() })
      assert.equal(ok.status, 201, ok.raw)
      // An acp_client key signs requests, never AP2 mandates; an RSA key cannot be one.
      const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'jwk' })
      assert.equal((await a.request('POST', '/trusted_keys', { role: 'acp_client', public_jwk: { ...rsa, kid: 'rsa-1' } })).status, 400)
    })

    test('over the rate limit: 429 as the official example, with Retry-After', async () => {
      const limited = await startTestApp(kind, { RATE_LIMIT_PER_SECOND: '1' })
      try {
        const a = await limited.account()
        const answers = await Promise.all(Array.from({ length: 12 }, () => a.request('POST', PATH, officialRequest(limited.clock.now()), {
          headers: { 'api-version': VERSION, 'idempotency-key': randomUUID() },
        })))
        const refused = answers.filter((r) => r.status === 429)
        assert.ok(refused.length > 0, answers.map((r) => r.status).join(','))
        for (const r of refused) {
          assert.deepEqual(r.body, examples.delegate_payment_error_rate_limit)
          assert.ok(Number(r.headers['retry-after']) >= 1)
          assert.equal(r.headers['api-version'], VERSION)
        }
      } finally {
        await limited.close()
      }
    })

    test('GET /.well-known/acp.json is open and lists 2026-04-17 and delegate_payment', async () => {
      const res = await t.inject({ method: 'GET', url: '/.well-known/acp.json' })
      assert.equal(res.status, 200, res.raw)
      assert.deepEqual(res.body.protocol.supported_versions, [VERSION])
      assert.deepEqual(res.body.capabilities.services, ['delegate_payment'])
      assert.match(String(res.headers['cache-control']), /public, max-age=3600/)
    })
  })
}
