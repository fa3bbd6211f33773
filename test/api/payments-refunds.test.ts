import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { assertInvalid, assertNotFound, assertPaymentError, ISO_MS, requestIdOf } from '../helpers/assertions.js'
import { createMandate, eventsOf } from '../helpers/fixtures.js'
import { getPayment, holding, pay, payRaw, refundRaw } from '../helpers/payments.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Payments and refunds through HTTP, on every store: contract section 6 (the mandate rules in their
 * order, the sandbox processor, settlement, refunds), the list rules of section 1, the errors of
 * section 2, the events of section 7, and the concurrency guarantees of section 6. This file:
 * refunds.
 */

const REFUND_ID = /^re_[0-9A-Za-z]{16,}$/
/** The settlement delay this suite's app runs with. */
const SETTLE_MS = 1000

for (const kind of storeKinds()) {
  describe(`payments: refunds (${kind.name})`, () => {
    let t: TestApp
    // A generous rate limit: the concurrency tests send 150 requests at once with one key.
    before(async () => { t = await startTestApp(kind, { SANDBOX_SETTLEMENT_DELAY_MS: String(SETTLE_MS), RATE_LIMIT_PER_SECOND: '100000' }) })
    after(async () => { await t.close() })

    // ---------------------------------------------------------------- refunds

    test('refunds: partial, then the rest by default; the payment becomes refunded; the mandate keeps its amount_used', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { max_amount: 1000 })
      const p = await pay(a, { mandate_id: m.id, amount: 1000 })

      const first = await refundRaw(a, p.id, { amount: 300, reason: 'requested_by_customer' })
      assert.equal(first.status, 201, first.raw)
      const r1 = first.body.data
      assert.match(r1.id, REFUND_ID)
      assert.match(r1.created_at, ISO_MS)
      assert.deepEqual(r1, { id: r1.id, payment_id: p.id, amount: 300, reason: 'requested_by_customer', status: 'succeeded', created_at: r1.created_at })
      const partly = await getPayment(a, p.id)
      assert.equal(partly.status, 'succeeded')
      assert.equal(partly.amount_refunded, 300)

      t.clock.advance(1000)
      const second = await refundRaw(a, p.id)
      assert.equal(second.status, 201, second.raw)
      const r2 = second.body.data
      assert.deepEqual(r2, { id: r2.id, payment_id: p.id, amount: 700, reason: null, status: 'succeeded', created_at: r2.created_at })
      const full = await getPayment(a, p.id)
      assert.equal(full.status, 'refunded')
      assert.equal(full.amount_refunded, 1000)
      assert.deepEqual(full, { ...p, status: 'refunded', amount_refunded: 1000, updated_at: full.updated_at })

      assertPaymentError(await refundRaw(a, p.id, { amount: 1 }), 'payment_not_refundable')
      assertPaymentError(await refundRaw(a, p.id), 'payment_not_refundable')

      // Refunds never give budget back.
      assert.deepEqual(await holding(a, m.id), { status: 'consumed', amount_used: 1000, uses_count: 1 })

      const listed = await a.request('GET', `/payments/${p.id}/refunds`)
      assert.equal(listed.status, 200, listed.raw)
      assert.deepEqual(listed.body, { data: [r2, r1], meta: { total: 2, limit: 10, offset: 0, has_more: false } })
      const paged = await a.request('GET', `/payments/${p.id}/refunds?limit=1&offset=1`)
      assert.equal(paged.status, 200, paged.raw)
      assert.deepEqual(paged.body, { data: [r1], meta: { total: 2, limit: 1, offset: 1, has_more: false } })

      const events = await eventsOf(t, a.id, p.id)
      assert.deepEqual(events.map((e) => e.type), ['payment.created', 'payment.succeeded', 'payment.refunded', 'payment.refunded'])
      assert.equal(events[2]!.data.object.amount_refunded, 300)
      assert.equal(events[2]!.data.object.status, 'succeeded')
      assert.equal(events[2]!.request_id, requestIdOf(first))
      assert.deepEqual(events[3]!.data.object, full)
      assert.equal(events[3]!.request_id, requestIdOf(second))
    })

    test('refunds: multi_use mandate budget is not given back by a refund', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { usage: 'multi_use', max_amount: 1000, budget_amount: 1000 })
      const p = await pay(a, { mandate_id: m.id, amount: 1000 })
      assert.equal((await refundRaw(a, p.id)).status, 201)
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 1000, uses_count: 1 })
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 1 }), 'mandate_budget_exceeded')
    })

    test('refunds: 422 payment_not_refundable for failed and pending payments; 422 refund_exceeds_payment; 404 unknown', async () => {
      const a = await t.account()
      const b = await t.account()
      const m = await createMandate(t, a, { usage: 'multi_use', max_amount: 5000, budget_amount: 50_000 })
      const failed = await pay(a, { mandate_id: m.id, amount: 100, payment_method: 'test_card_declined' })
      assertPaymentError(await refundRaw(a, failed.id), 'payment_not_refundable')
      assertPaymentError(await refundRaw(a, failed.id, { amount: 50 }), 'payment_not_refundable')
      const pending = await pay(a, { mandate_id: m.id, amount: 100, payment_method: 'bank_transfer' })
      assertPaymentError(await refundRaw(a, pending.id, { amount: 50 }), 'payment_not_refundable')

      const p = await pay(a, { mandate_id: m.id, amount: 1000 })
      assertPaymentError(await refundRaw(a, p.id, { amount: 1001 }), 'refund_exceeds_payment')
      assert.equal((await refundRaw(a, p.id, { amount: 600 })).status, 201)
      assertPaymentError(await refundRaw(a, p.id, { amount: 401 }), 'refund_exceeds_payment')
      const ok = await refundRaw(a, p.id, { amount: 400 })
      assert.equal(ok.status, 201, ok.raw)
      assert.equal(ok.body.data.amount, 400)
      const after = await getPayment(a, p.id)
      assert.equal(after.status, 'refunded')
      assert.equal(after.amount_refunded, 1000)

      assertInvalid(await refundRaw(a, p.id, { amount: 0 }), 'amount')
      assertInvalid(await refundRaw(a, p.id, { amount: 1.5 }), 'amount')
      assertInvalid(await refundRaw(a, p.id, { amount: 10, colour: 'red' }), 'colour', 'parameter_unknown')

      assertNotFound(await refundRaw(a, 'pay_01aaaaaaaaaaaaaaaaaaaaaaaa', { amount: 10 }))
      const q = await pay(a, { mandate_id: m.id, amount: 1000 })
      assertNotFound(await refundRaw(b, q.id, { amount: 10 }))
      assertNotFound(await b.request('GET', `/payments/${q.id}/refunds`))
      assertNotFound(await a.request('GET', '/payments/pay_01aaaaaaaaaaaaaaaaaaaaaaaa/refunds'))
      assert.equal((await getPayment(a, q.id)).amount_refunded, 0)

      const none = await a.request('GET', `/payments/${q.id}/refunds`)
      assert.equal(none.status, 200, none.raw)
      assert.deepEqual(none.body, { data: [], meta: { total: 0, limit: 10, offset: 0, has_more: false } })
      assert.deepEqual((await eventsOf(t, a.id, failed.id)).map((e) => e.type), ['payment.created', 'payment.failed'])
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 2100, uses_count: 3 })
    })
  })
}
