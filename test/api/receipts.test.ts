import assert from 'node:assert/strict'
import { createHash, randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose'
import { buildApp } from '../../src/app.js'
import { RECEIPT_ISSUER } from '../../src/modules/receipts/service.js'
import { startTestApp, type TestAccount, type TestApp, toResponse } from '../helpers/app.js'
import { assertError, assertNotFound, ISO_MS } from '../helpers/assertions.js'
import { createMandate, DAY_MS } from '../helpers/fixtures.js'
import { pay, refundRaw } from '../helpers/payments.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * AP2 PaymentReceipts signed by Wishpay's own key, and that key's JWKS, on every store: the receipt
 * verifies against GET /.well-known/jwks.json and conforms to AP2's payment_receipt.json; it is signed
 * once and stored; plain, pending, unknown and other accounts' payments have none; the key survives a
 * restart, and after a rotation the old receipts still verify.
 */

// The AP2 schemas, loaded as test/unit/ap2-open-mandate.test.ts loads them (types/*.json included).
const SCHEMAS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared/protocols/ap2-v0.2')
const ajv = new Ajv2020({ strict: false, allErrors: true })
for (const dir of [SCHEMAS, path.join(SCHEMAS, 'types')]) {
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.json'))) ajv.addSchema(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')))
}
// AP2 v0.2's types/receipt_status.json names itself .../schemas/receipt-status.json while
// payment_receipt.json refers to it as types/receipt_status.json: it is registered under that name too.
for (const file of fs.readdirSync(path.join(SCHEMAS, 'types')).filter((f) => f.endsWith('.json'))) {
  const at = `https://ap2-protocol.org/schemas/types/${file}`
  const { $id, ...schema } = JSON.parse(fs.readFileSync(path.join(SCHEMAS, 'types', file), 'utf8'))
  if ($id !== at) ajv.addSchema(schema, at)
}
const validateReceipt = ajv.getSchema('https://ap2-protocol.org/schemas/payment_receipt.json')!

function assertConforms(claims: unknown): void {
  assert.ok(validateReceipt(claims), `not a PaymentReceipt: ${JSON.stringify(validateReceipt.errors)} ${JSON.stringify(claims)}`)
}

const referenceOf = (text: string) => createHash('sha256').update(text).digest('base64url')
const RECEIPT_KEYS = ['claims', 'created_at', 'kid', 'payment_id', 'receipt']

for (const kind of storeKinds()) {
  describe(`AP2 receipts and the JWKS (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    /** A payment made through the API, then marked as made with an AP2 closed mandate (as the AP2 payment path will). */
    async function ap2Payment(a: TestAccount, paymentMethod = 'card', mandateBody: Record<string, unknown> = {}): Promise<{ payment: any, reference: string }> {
      const mandate = await createMandate(t, a, { usage: 'multi_use', budget_amount: 100_000, ...mandateBody })
      const payment = await pay(a, { mandate_id: mandate.id, amount: 1000, payment_method: paymentMethod })
      const reference = referenceOf(`closed mandate ${randomUUID()}`)
      await t.store.db.kysely.updateTable('payments').set({ ap2: JSON.stringify({ reference, mandate_id: mandate.id }) }).where('id', '=', payment.id).execute()
      return { payment, reference }
    }

    async function jwks(): Promise<any> {
      const res = await t.inject({ method: 'GET', url: '/.well-known/jwks.json' })
      assert.equal(res.status, 200, res.raw)
      return res.body
    }

    async function receiptOf(a: TestAccount, paymentId: string, key?: string): Promise<any> {
      const res = await a.request('GET', `/payments/${paymentId}/receipt`, undefined, key ? { key } : {})
      assert.equal(res.status, 200, res.raw)
      assert.deepEqual(Object.keys(res.body.data).sort(), RECEIPT_KEYS)
      return res.body.data
    }

    /** Verifies the receipt against the JWKS the app serves now; returns the verified payload. */
    async function verify(receipt: string): Promise<any> {
      const { payload, protectedHeader } = await jwtVerify(receipt, createLocalJWKSet(await jwks()), { algorithms: ['ES256'], issuer: RECEIPT_ISSUER })
      assert.equal(protectedHeader.typ, 'JWT')
      return payload
    }

    test('GET /.well-known/jwks.json needs no key, is cacheable, publishes public members only', async () => {
      const res = await t.inject({ method: 'GET', url: '/.well-known/jwks.json' })
      assert.equal(res.status, 200, res.raw)
      assert.equal(res.headers['cache-control'], 'public, max-age=300')
      assert.ok(res.body.keys.length >= 1)
      for (const key of res.body.keys) {
        assert.deepEqual(Object.keys(key).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y'])
        assert.deepEqual([key.kty, key.crv, key.alg, key.use], ['EC', 'P-256', 'ES256', 'sig'])
      }
      // A bearer key changes nothing; the private halves stay in the store.
      const a = await t.account()
      assert.deepEqual((await a.request('GET', '/.well-known/jwks.json')).body, res.body)
      assert.doesNotMatch(res.raw, /"d"/)
    })

    test('a succeeded AP2 payment: a Success receipt that verifies against the JWKS and conforms to payment_receipt.json', async () => {
      const a = await t.account()
      const { payment, reference } = await ap2Payment(a)
      assert.equal(payment.status, 'succeeded')
      const receipt = await receiptOf(a, payment.id)
      const payload = await verify(receipt.receipt)
      assert.deepEqual(payload, receipt.claims)
      assertConforms(payload)
      assert.deepEqual(payload, {
        iss: RECEIPT_ISSUER,
        iat: payload.iat,
        status: 'Success',
        reference,
        payment_id: payment.id,
        psp_confirmation_id: payment.id,
        network_confirmation_id: `net_${payment.id}`,
      })
      assert.ok(Number.isInteger(payload.iat) && Math.abs(payload.iat - t.clock.now().getTime() / 1000) < 60)
      assert.equal(decodeProtectedHeader(receipt.receipt).kid, receipt.kid)
      assert.deepEqual(decodeProtectedHeader(receipt.receipt), { alg: 'ES256', kid: receipt.kid, typ: 'JWT' })
      assert.equal(receipt.payment_id, payment.id)
      assert.match(receipt.created_at, ISO_MS)
    })

    test('a failed AP2 payment: an Error receipt with the failure code and message; a refunded one: Success', async () => {
      const a = await t.account()
      const { payment } = await ap2Payment(a, 'test_card_declined')
      assert.equal(payment.status, 'failed')
      const failed = await verify((await receiptOf(a, payment.id)).receipt)
      assertConforms(failed)
      assert.equal(failed.status, 'Error')
      assert.equal(failed.error, payment.failure_code)
      assert.equal(failed.error_description, payment.failure_message)
      assert.equal(failed.psp_confirmation_id, undefined)

      const refunded = await ap2Payment(a)
      assert.equal((await refundRaw(a, refunded.payment.id)).status, 201)
      const payload = await verify((await receiptOf(a, refunded.payment.id)).receipt)
      assertConforms(payload)
      assert.equal(payload.status, 'Success')
    })

    test('the receipt is signed once: every later read answers the same bytes', async () => {
      const a = await t.account()
      const { payment } = await ap2Payment(a)
      const first = await a.request('GET', `/payments/${payment.id}/receipt`)
      assert.equal(first.status, 200)
      t.clock.advance(5000)
      const second = await a.request('GET', `/payments/${payment.id}/receipt`, undefined, { key: a.readKey })
      assert.equal(second.status, 200)
      assert.equal(second.raw, first.raw)
      assert.equal(first.headers['cache-control'], 'no-store')
    })

    test('10 concurrent first reads store exactly one receipt, and all answer it', async () => {
      const a = await t.account()
      const { payment } = await ap2Payment(a)
      const answers = await Promise.all(Array.from({ length: 10 }, () => a.request('GET', `/payments/${payment.id}/receipt`)))
      for (const res of answers) assert.equal(res.status, 200, res.raw)
      assert.equal(new Set(answers.map((res) => res.body.data.receipt)).size, 1)
      const rows = await t.store.db.kysely.selectFrom('receipts').selectAll().where('payment_id', '=', payment.id).execute()
      assert.equal(rows.length, 1)
      assert.equal(rows[0]!.jwt, answers[0]!.body.data.receipt)
      assert.equal(rows[0]!.account_id, a.id)
    })

    test('404 for a plain payment and an unknown id; 409 for a pending payment; 404 for another account', async () => {
      const a = await t.account()
      const mandate = await createMandate(t, a, { usage: 'multi_use', budget_amount: 100_000 })
      const plain = await pay(a, { mandate_id: mandate.id, amount: 100 })
      const notAp2 = assertError(await a.request('GET', `/payments/${plain.id}/receipt`), 404, 'invalid_request_error', 'resource_missing', 'id')
      assert.match(notAp2.message, /not made with an AP2 mandate/)
      assertNotFound(await a.request('GET', '/payments/pay_unknown/receipt'))

      const { payment: pending } = await ap2Payment(a, 'bank_transfer')
      assert.equal(pending.status, 'pending')
      const notFinal = assertError(await a.request('GET', `/payments/${pending.id}/receipt`), 409, 'conflict_error', 'invalid_state_transition')
      assert.match(notFinal.message, /pending.*final/)
      assert.equal((await t.store.db.kysely.selectFrom('receipts').select('payment_id').where('payment_id', '=', pending.id).execute()).length, 0)

      const { payment } = await ap2Payment(a)
      const b = await t.account()
      const other = assertError(await b.request('GET', `/payments/${payment.id}/receipt`), 404, 'invalid_request_error', 'resource_missing')
      assert.match(other.message, /No such payment/)
      assertError(await a.request('GET', `/payments/${payment.id}/receipt`, undefined, { key: null }), 401, 'authentication_error', 'authentication_required')
    })

    test('an agent key reads the receipts of its own agent\'s payments only', async () => {
      const a = await t.account()
      const newAgent = async () => {
        const agent = (await a.request('POST', '/agents', { name: 'assistant' })).body.data
        const key = (await a.request('POST', `/agents/${agent.id}/keys`, {})).body.data.key
        return { id: agent.id as string, key: key as string }
      }
      const mine = await newAgent()
      const theirs = await newAgent()
      const { payment: own } = await ap2Payment(a, 'card', { agent_id: mine.id })
      const { payment: another } = await ap2Payment(a, 'card', { agent_id: theirs.id })
      assert.equal((await receiptOf(a, own.id, mine.key)).payment_id, own.id)
      assertNotFound(await a.request('GET', `/payments/${another.id}/receipt`, undefined, { key: mine.key }))
    })

    test('a restart (a new app on the same store) keeps the same key', async () => {
      const a = await t.account()
      const before = await jwks()
      const kid = await t.services.receipts.ensureSigningKey()
      const restarted = await buildApp({ config: t.config, db: t.store.db, clock: t.clock })
      try {
        const res = toResponse(await restarted.inject({ method: 'GET', url: '/.well-known/jwks.json' }))
        assert.deepEqual(res.body, before)
        const { payment } = await ap2Payment(a)
        const receipt = toResponse(await restarted.inject({ method: 'GET', url: `/payments/${payment.id}/receipt`, headers: { authorization: `Bearer ${a.key}` } }))
        assert.equal(receipt.status, 200, receipt.raw)
        assert.equal(receipt.body.data.kid, kid)
      } finally {
        await restarted.close()
      }
      assert.deepEqual((await t.store.db.kysely.selectFrom('signing_keys').select('kid').where('status', '=', 'active').execute()).map((r) => r.kid), [kid])
    })

    test('rotation: new receipts carry the new kid, old receipts still verify; a retired key leaves the JWKS after 30 days', async () => {
      const a = await t.account()
      const { payment: old } = await ap2Payment(a)
      const oldReceipt = await receiptOf(a, old.id)
      const rotated = await t.services.receipts.rotateSigningKey()
      assert.notEqual(rotated.kid, oldReceipt.kid)
      assert.deepEqual(rotated.retired, [oldReceipt.kid])

      const { payment: fresh } = await ap2Payment(a)
      const newReceipt = await receiptOf(a, fresh.id)
      assert.equal(newReceipt.kid, rotated.kid)
      assert.equal(decodeProtectedHeader(newReceipt.receipt).kid, rotated.kid)
      const kids = (await jwks()).keys.map((k: any) => k.kid)
      assert.ok(kids.includes(oldReceipt.kid) && kids.includes(rotated.kid), kids.join(', '))
      assertConforms(await verify(newReceipt.receipt))
      assertConforms(await verify(oldReceipt.receipt))
      // The old receipt is answered as it was stored.
      assert.equal((await receiptOf(a, old.id)).receipt, oldReceipt.receipt)
      const row = await t.store.db.kysely.selectFrom('signing_keys').selectAll().where('kid', '=', oldReceipt.kid).executeTakeFirstOrThrow()
      assert.equal(row.status, 'retired')
      assert.match(row.retired_at!, ISO_MS)

      t.clock.advance(31 * DAY_MS)
      assert.deepEqual((await jwks()).keys.map((k: any) => k.kid), [rotated.kid])
      await assert.rejects(verify(oldReceipt.receipt))
    })
  })
}
