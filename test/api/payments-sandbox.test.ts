import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { assertPaymentError, ISO_MS, requestIdOf } from '../helpers/assertions.js'
import { createMandate, eventsOf, getMandate } from '../helpers/fixtures.js'
import { getPayment, holding, pay, payRaw, refundRaw } from '../helpers/payments.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Payments and refunds through HTTP, on every store: contract section 6 (the mandate rules in their
 * order, the sandbox processor, settlement, refunds), the list rules of section 1, the errors of
 * section 2, the events of section 7, and the concurrency guarantees of section 6. This file:
 * the sandbox processor and settlement.
 */

/**
 * The settlement delay this suite's app runs with. The test clock is the real time plus what a test
 * advances it by, so a check made half a delay in must be far from its end in real time too: at 1 s, a
 * busy machine took the 500 ms left before the check (it failed once, on Node 24, in a full run).
 */
const SETTLE_MS = 60_000

for (const kind of storeKinds()) {
  describe(`payments: sandbox processor (${kind.name})`, () => {
    let t: TestApp
    // A generous rate limit: the concurrency tests send 150 requests at once with one key.
    before(async () => { t = await startTestApp(kind, { SANDBOX_SETTLEMENT_DELAY_MS: String(SETTLE_MS), RATE_LIMIT_PER_SECOND: '100000' }) })
    after(async () => { await t.close() })

    // ---------------------------------------------------------------- sandbox processor

    test('sandbox: card and wallet succeed; declines are 201 failed with their failure_code', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { usage: 'multi_use', max_amount: 1000, budget_amount: 10_000 })
      const card = await pay(a, { mandate_id: m.id, amount: 100, payment_method: 'card' })
      assert.equal(card.status, 'succeeded')
      const wallet = await pay(a, { mandate_id: m.id, amount: 200, payment_method: 'wallet' })
      assert.equal(wallet.status, 'succeeded')
      assert.equal(wallet.payment_method, 'wallet')
      assert.equal(wallet.failure_code, null)

      const declined = await pay(a, { mandate_id: m.id, amount: 300, payment_method: 'test_card_declined' })
      assert.deepEqual(declined, {
        ...declined,
        status: 'failed',
        payment_method: 'test_card_declined',
        amount: 300,
        amount_refunded: 0,
        failure_code: 'card_declined',
      })
      assert.equal(typeof declined.failure_message, 'string')
      assert.ok(declined.failure_message.length > 0)
      assert.deepEqual(await getPayment(a, declined.id), declined)

      const poor = await pay(a, { mandate_id: m.id, amount: 400, payment_method: 'test_insufficient_funds' })
      assert.equal(poor.status, 'failed')
      assert.equal(poor.failure_code, 'insufficient_funds')
      assert.equal(typeof poor.failure_message, 'string')
      assert.ok(poor.failure_message.length > 0)

      // Failed payments hold nothing of the mandate.
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 300, uses_count: 2 })
      assert.deepEqual((await eventsOf(t, a.id, declined.id)).map((e) => e.type), ['payment.created', 'payment.failed'])
      assert.deepEqual((await eventsOf(t, a.id, card.id)).map((e) => e.type), ['payment.created', 'payment.succeeded'])
      const failedEvent = (await eventsOf(t, a.id, declined.id))[1]!
      assert.equal(failedEvent.data.object.status, 'failed')
      assert.equal(failedEvent.data.object.failure_code, 'card_declined')
    })

    test('sandbox: a declined payment releases its hold; a single_use mandate still pays after a decline', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { max_amount: 1000 })
      for (const method of ['test_card_declined', 'test_insufficient_funds']) {
        const failed = await pay(a, { mandate_id: m.id, amount: 1000, payment_method: method })
        assert.equal(failed.status, 'failed')
        assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 0, uses_count: 0 })
      }
      const ok = await pay(a, { mandate_id: m.id, amount: 1000 })
      assert.equal(ok.status, 'succeeded')
      assert.deepEqual(await holding(a, m.id), { status: 'consumed', amount_used: 1000, uses_count: 1 })
      const events = await eventsOf(t, a.id, m.id)
      assert.deepEqual(events.map((e) => e.type), ['mandate.created', 'mandate.consumed'])
      assert.equal(events[1]!.data.object.status, 'consumed')
      assert.equal(events[1]!.data.object.amount_used, 1000)
    })

    test('sandbox: bank_transfer is pending, then processing, then succeeded after the settlement delay', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { max_amount: 2000 })
      const created = await payRaw(a, { mandate_id: m.id, amount: 1500, payment_method: 'bank_transfer' })
      assert.equal(created.status, 201, created.raw)
      const p = created.body.data
      assert.equal(p.status, 'pending')
      assert.equal(p.payment_method, 'bank_transfer')
      assert.equal(p.failure_code, null)
      // In flight it holds the mandate: a single_use mandate cannot pay twice.
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 1500, uses_count: 1 })
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 100 }), 'mandate_consumed')
      assert.deepEqual(await eventsOf(t, a.id, m.id).then((e) => e.map((x) => x.type)), ['mandate.created'])
      assertPaymentError(await refundRaw(a, p.id), 'payment_not_refundable')

      await t.jobs.runOnce()
      const processing = await getPayment(a, p.id)
      assert.equal(processing.status, 'processing')
      assertPaymentError(await refundRaw(a, p.id), 'payment_not_refundable')

      t.clock.advance(SETTLE_MS / 2)
      await t.jobs.runOnce()
      assert.equal((await getPayment(a, p.id)).status, 'processing', 'not before the settlement delay')

      t.clock.advance(SETTLE_MS / 2)
      await t.jobs.runOnce()
      const done = await getPayment(a, p.id)
      assert.deepEqual(done, { ...p, status: 'succeeded', updated_at: done.updated_at })
      assert.ok(done.updated_at > p.updated_at)
      assert.deepEqual(await holding(a, m.id), { status: 'consumed', amount_used: 1500, uses_count: 1 })

      const events = await eventsOf(t, a.id, p.id)
      assert.deepEqual(events.map((e) => e.type), ['payment.created', 'payment.processing', 'payment.succeeded'])
      assert.deepEqual(events.map((e) => e.data.object.status), ['pending', 'processing', 'succeeded'])
      assert.equal(events[0]!.request_id, requestIdOf(created))
      assert.deepEqual(events[2]!.data.object, done)
      assert.deepEqual((await eventsOf(t, a.id, m.id)).map((e) => e.type), ['mandate.created', 'mandate.consumed'])

      // Further passes change nothing.
      t.clock.advance(SETTLE_MS * 5)
      await t.jobs.runOnce()
      assert.deepEqual(await getPayment(a, p.id), done)
      assert.equal((await eventsOf(t, a.id, p.id)).length, 3)
    })

    test('sandbox: test_bank_transfer_failed ends failed and releases the hold', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { max_amount: 2000 })
      const p = await pay(a, { mandate_id: m.id, amount: 700, payment_method: 'test_bank_transfer_failed' })
      assert.equal(p.status, 'pending')
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 700, uses_count: 1 })
      await t.jobs.runOnce()
      assert.equal((await getPayment(a, p.id)).status, 'processing')
      t.clock.advance(SETTLE_MS)
      await t.jobs.runOnce()
      const done = await getPayment(a, p.id)
      assert.equal(done.status, 'failed')
      assert.equal(typeof done.failure_code, 'string')
      assert.ok(done.failure_code.length > 0)
      assert.equal(typeof done.failure_message, 'string')
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 0, uses_count: 0 })

      const events = await eventsOf(t, a.id, p.id)
      assert.deepEqual(events.map((e) => e.type), ['payment.created', 'payment.processing', 'payment.failed'])
      assert.deepEqual(events[2]!.data.object, done)
      assert.deepEqual((await eventsOf(t, a.id, m.id)).map((e) => e.type), ['mandate.created'])

      // Released: the single_use mandate can still pay.
      assert.equal((await pay(a, { mandate_id: m.id, amount: 2000 })).status, 'succeeded')
      assert.deepEqual(await holding(a, m.id), { status: 'consumed', amount_used: 2000, uses_count: 1 })
    })

    test('events: payment.created then payment.succeeded, and mandate.consumed, with request ids', async () => {
      const a = await t.account()
      const m = await createMandate(t, a)
      const res = await payRaw(a, { mandate_id: m.id, amount: 999 })
      assert.equal(res.status, 201, res.raw)
      const p = res.body.data
      const events = await eventsOf(t, a.id, p.id)
      assert.deepEqual(events.map((e) => e.type), ['payment.created', 'payment.succeeded'])
      for (const e of events) {
        assert.match(e.id, /^evt_/)
        assert.match(e.created_at, ISO_MS)
        assert.equal(e.request_id, requestIdOf(res))
      }
      assert.deepEqual(events[1]!.data, { object: p })
      const mandateEvents = await eventsOf(t, a.id, m.id)
      assert.deepEqual(mandateEvents.map((e) => e.type), ['mandate.created', 'mandate.consumed'])
      assert.deepEqual(mandateEvents[1]!.data.object, await getMandate(a, m.id))
      // A multi_use mandate is never consumed.
      const multi = await createMandate(t, a, { usage: 'multi_use', budget_amount: 5000 })
      await pay(a, { mandate_id: multi.id, amount: 5000 })
      assert.deepEqual((await eventsOf(t, a.id, multi.id)).map((e) => e.type), ['mandate.created'])
      assert.equal((await getMandate(a, multi.id)).status, 'active')
    })
  })
}
