import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Response, startTestApp, type TestApp } from '../helpers/app.js'
import { assertPaymentError } from '../helpers/assertions.js'
import { createMandate } from '../helpers/fixtures.js'
import { getPayment, holding, pay, payRaw, paymentRows, refundRaw } from '../helpers/payments.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Payments and refunds through HTTP, on every store: contract section 6 (the mandate rules in their
 * order, the sandbox processor, settlement, refunds), the list rules of section 1, the errors of
 * section 2, the events of section 7, and the concurrency guarantees of section 6. This file:
 * concurrent payments on one mandate and one key.
 */

/** The settlement delay this suite's app runs with. */
const SETTLE_MS = 1000

for (const kind of storeKinds()) {
  describe(`payments: concurrency (${kind.name})`, () => {
    let t: TestApp
    // A generous rate limit: the concurrency tests send 150 requests at once with one key.
    before(async () => { t = await startTestApp(kind, { SANDBOX_SETTLEMENT_DELAY_MS: String(SETTLE_MS), RATE_LIMIT_PER_SECOND: '100000' }) })
    after(async () => { await t.close() })

    // ---------------------------------------------------------------- concurrency

    test('concurrency: 150 payments of 10 against a budget of 1000: exactly 100 succeed, 50 mandate_budget_exceeded', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { usage: 'multi_use', max_amount: 10, budget_amount: 1000 })
      const answers = await Promise.all(Array.from({ length: 150 }, () => payRaw(a, { mandate_id: m.id, amount: 10 })))
      const ok = answers.filter((r) => r.status === 201)
      const refused = answers.filter((r) => r.status !== 201)
      assert.equal(ok.length, 100, `statuses: ${JSON.stringify(tally(answers))}`)
      for (const r of ok) assert.equal(r.body.data.status, 'succeeded')
      assert.equal(refused.length, 50)
      for (const r of refused) assertPaymentError(r, 'mandate_budget_exceeded')
      assert.equal(new Set(ok.map((r) => r.body.data.id)).size, 100)
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 1000, uses_count: 100 })
      const rows = await paymentRows(t, m.id)
      assert.equal(rows.length, 100)
      assert.equal(rows.reduce((sum, r) => sum + r.amount, 0), 1000)
    })

    test('concurrency: 20 payments on a single_use mandate: exactly one succeeds, the rest mandate_consumed', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { max_amount: 500 })
      const answers = await Promise.all(Array.from({ length: 20 }, () => payRaw(a, { mandate_id: m.id, amount: 500 })))
      const ok = answers.filter((r) => r.status === 201)
      assert.equal(ok.length, 1, `statuses: ${JSON.stringify(tally(answers))}`)
      assert.equal(ok[0]!.body.data.status, 'succeeded')
      for (const r of answers.filter((x) => x.status !== 201)) assertPaymentError(r, 'mandate_consumed')
      assert.deepEqual(await holding(a, m.id), { status: 'consumed', amount_used: 500, uses_count: 1 })
      assert.equal((await paymentRows(t, m.id)).length, 1)
    })

    test('concurrency: 20 refunds of 100 on a payment of 1000: exactly 10 succeed, the rest 422', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { max_amount: 1000 })
      const p = await pay(a, { mandate_id: m.id, amount: 1000 })
      const answers = await Promise.all(Array.from({ length: 20 }, () => refundRaw(a, p.id, { amount: 100 })))
      const ok = answers.filter((r) => r.status === 201)
      assert.equal(ok.length, 10, `statuses: ${JSON.stringify(tally(answers))}`)
      for (const r of ok) assert.equal(r.body.data.amount, 100)
      for (const r of answers.filter((x) => x.status !== 201)) {
        assert.equal(r.status, 422, r.raw)
        assert.equal(r.body.error.type, 'payment_error')
        assert.ok(['payment_not_refundable', 'refund_exceeds_payment'].includes(r.body.error.code), r.raw)
      }
      const after = await getPayment(a, p.id)
      assert.equal(after.amount_refunded, 1000)
      assert.equal(after.status, 'refunded')
      const refunds = await t.store.db.kysely.selectFrom('refunds').selectAll().where('payment_id', '=', p.id).execute()
      assert.equal(refunds.length, 10)
      assert.deepEqual(await holding(a, m.id), { status: 'consumed', amount_used: 1000, uses_count: 1 })
    })

    test('concurrency: 20 refunds of 300 on a payment of 1000: exactly 3 succeed, the rest refund_exceeds_payment', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { max_amount: 1000 })
      const p = await pay(a, { mandate_id: m.id, amount: 1000 })
      const answers = await Promise.all(Array.from({ length: 20 }, () => refundRaw(a, p.id, { amount: 300 })))
      assert.equal(answers.filter((r) => r.status === 201).length, 3, `statuses: ${JSON.stringify(tally(answers))}`)
      for (const r of answers.filter((x) => x.status !== 201)) assertPaymentError(r, 'refund_exceeds_payment')
      const after = await getPayment(a, p.id)
      assert.equal(after.amount_refunded, 900)
      assert.equal(after.status, 'succeeded')
      const rest = await refundRaw(a, p.id)
      assert.equal(rest.status, 201, rest.raw)
      assert.equal(rest.body.data.amount, 100)
      assert.equal((await getPayment(a, p.id)).status, 'refunded')
    })
  })
}

function tally(answers: Response[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const r of answers) {
    const k = r.status === 201 ? '201' : `${r.status} ${r.body?.error?.code}`
    counts[k] = (counts[k] ?? 0) + 1
  }
  return counts
}
