import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { assertError } from '../helpers/assertions.js'
import { countEvents, getMandate } from '../helpers/fixtures.js'
import { assertFresh, assertReplay, keyRows, newKey, multiUseMandate, paymentCount, succeededPayment } from '../helpers/idempotency.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Idempotency through HTTP, on every store: contract section 5 (with the error envelope of section 2
 * and the payment operations of section 6). This file: which outcomes are saved and which are not.
 */

for (const kind of storeKinds()) {
  describe(`idempotency: which outcomes are saved (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    // ---------------------------------------------------------------- saved outcomes

    test('a 422 mandate_not_found is saved and replayed', async () => {
      const a = await t.account()
      const key = newKey()
      const body = { mandate_id: 'mdt_doesnotexist0000000000', amount: 100, idempotency_key: key }
      const first = await a.request('POST', '/payments', body)
      assertError(first, 422, 'payment_error', 'mandate_not_found')
      assert.equal(first.headers['idempotent-replayed'], undefined)
      const again = await a.request('POST', '/payments', body)
      assertReplay(again, first)
      assert.equal(again.body.error.request_id, first.body.error.request_id)
      assert.deepEqual(await keyRows(t, a.id), [key])
      assert.equal(await paymentCount(t, a.id), 0)
      assert.equal(await countEvents(t, a.id, 'payment.created'), 0)
    })

    test('a 422 mandate_budget_exceeded is saved: replayed even once the mandate would allow it, and it left no trace', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a, { max_amount: 1000, budget_amount: 1000 })
      // A bank transfer that will fail holds 600 until it settles.
      const held = await a.request('POST', '/payments', { mandate_id: m.id, amount: 600, payment_method: 'test_bank_transfer_failed', idempotency_key: newKey('held') })
      assertFresh(held, 201)
      assert.equal(held.body.data.status, 'pending')
      const before = await getMandate(a, m.id)
      assert.equal(before.amount_used, 600)

      const key = newKey()
      const body = { mandate_id: m.id, amount: 600, idempotency_key: key }
      const refused = await a.request('POST', '/payments', body)
      assertError(refused, 422, 'payment_error', 'mandate_budget_exceeded')
      assert.equal(refused.headers['idempotent-replayed'], undefined)
      // No trace of work: no payment, the mandate as it was, no event.
      assert.equal(await paymentCount(t, a.id), 1)
      assert.deepEqual(await getMandate(a, m.id), before)
      assert.equal(await countEvents(t, a.id, 'payment.created'), 1)

      // The transfer fails and gives its 600 back.
      await t.jobs.runOnce()
      t.clock.advance(t.config.sandboxSettlementDelayMs + 1)
      await t.jobs.runOnce()
      const settled = await a.request('GET', `/payments/${held.body.data.id}`)
      assert.equal(settled.body.data.status, 'failed')
      assert.equal((await getMandate(a, m.id)).amount_used, 0)

      // The key still answers what it answered; a new key is processed.
      assertReplay(await a.request('POST', '/payments', body), refused)
      assert.equal(await paymentCount(t, a.id), 1)
      const fresh = await a.request('POST', '/payments', { ...body, idempotency_key: newKey() })
      assertFresh(fresh, 201)
      assert.equal((await getMandate(a, m.id)).amount_used, 600)
    })

    test('a 404 (refund of an unknown payment) is saved and replayed', async () => {
      const a = await t.account()
      const key = newKey()
      const first = await a.request('POST', '/payments/pay_doesnotexist0000000000/refunds', { amount: 10, idempotency_key: key })
      assertError(first, 404, 'invalid_request_error', 'resource_missing')
      assert.equal(first.headers['idempotent-replayed'], undefined)
      const again = await a.request('POST', '/payments/pay_doesnotexist0000000000/refunds', { amount: 10 }, { headers: { 'idempotency-key': key } })
      assertReplay(again, first)
      assert.deepEqual(await keyRows(t, a.id), [key])
    })

    test('a 422 refund_exceeds_payment is saved and replayed; the payment is untouched', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a)
      const p = await succeededPayment(a, m.id, 100)
      const key = newKey()
      const first = await a.request('POST', `/payments/${p.id}/refunds`, { amount: 101, idempotency_key: key })
      assertError(first, 422, 'payment_error', 'refund_exceeds_payment')
      assertReplay(await a.request('POST', `/payments/${p.id}/refunds`, { amount: 101, idempotency_key: key }), first)
      const after = await a.request('GET', `/payments/${p.id}`)
      assert.equal(after.body.data.amount_refunded, 0)
      assert.equal(after.body.data.status, 'succeeded')
    })

    // ---------------------------------------------------------------- not saved

    test('a 400 validation error is not saved: the same key with a valid body then succeeds', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a)
      const key = newKey()
      const bad = await a.request('POST', '/payments', { mandate_id: m.id, amount: -1, idempotency_key: key })
      assertError(bad, 400, 'invalid_request_error', 'parameter_invalid', 'amount')
      assert.deepEqual(await keyRows(t, a.id), [])
      // The same bad request again is answered afresh, not replayed.
      const badAgain = await a.request('POST', '/payments', { mandate_id: m.id, amount: -1, idempotency_key: key })
      assertError(badAgain, 400, 'invalid_request_error', 'parameter_invalid', 'amount')
      assert.equal(badAgain.headers['idempotent-replayed'], undefined)
      const ok = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: key })
      assertFresh(ok, 201)
      assert.equal(ok.body.data.amount, 100)
      assert.equal(await paymentCount(t, a.id), 1)
    })

    test('a 400 from the service (unknown payment_method) is not saved either', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a)
      const key = newKey()
      const bad = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, payment_method: 'carrier_pigeon', idempotency_key: key })
      assertError(bad, 400, 'invalid_request_error', 'parameter_invalid', 'payment_method')
      assert.deepEqual(await keyRows(t, a.id), [])
      const ok = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: key })
      assertFresh(ok, 201)
    })

    test('401 and 403 are not saved: the retry with a write key succeeds', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a)
      const key = newKey()
      const body = { mandate_id: m.id, amount: 100, idempotency_key: key }
      const unauthenticated = await a.request('POST', '/payments', body, { key: null })
      assertError(unauthenticated, 401, 'authentication_error', 'authentication_required')
      const badKey = await a.request('POST', '/payments', body, { key: `${a.key}x` })
      assertError(badKey, 401, 'authentication_error', 'invalid_api_key')
      const readOnly = await a.request('POST', '/payments', body, { key: a.readKey })
      assertError(readOnly, 403, 'permission_error', 'insufficient_scope')
      const readOnlyAgain = await a.request('POST', '/payments', body, { key: a.readKey })
      assertError(readOnlyAgain, 403, 'permission_error', 'insufficient_scope')
      assert.equal(readOnlyAgain.headers['idempotent-replayed'], undefined)
      assert.deepEqual(await keyRows(t, a.id), [])
      assert.equal(await paymentCount(t, a.id), 0)

      const ok = await a.request('POST', '/payments', body)
      assertFresh(ok, 201)
      assert.equal(await paymentCount(t, a.id), 1)
      assertReplay(await a.request('POST', '/payments', body), ok)
    })

    test('a 409 invalid_state_transition is not saved: the same key stays retryable, never replayed', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a)
      const revoked = await a.request('POST', `/mandates/${m.id}/revoke`)
      assert.equal(revoked.status, 200, revoked.raw)
      const key = newKey()
      const first = await a.request('POST', `/mandates/${m.id}/revoke`, { idempotency_key: key })
      assertError(first, 409, 'conflict_error', 'invalid_state_transition')
      assert.equal(first.headers['idempotent-replayed'], undefined)
      assert.deepEqual(await keyRows(t, a.id), [])
      const second = await a.request('POST', `/mandates/${m.id}/revoke`, { idempotency_key: key })
      assertError(second, 409, 'conflict_error', 'invalid_state_transition')
      assert.equal(second.headers['idempotent-replayed'], undefined)
      assert.notEqual(second.body.error.request_id, first.body.error.request_id)
      assert.deepEqual(await keyRows(t, a.id), [])
    })
  })
}
