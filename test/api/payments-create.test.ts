import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { assertEnvelopeHeaders, assertError, assertInvalid, assertPaymentError, ISO_MS } from '../helpers/assertions.js'
import { createMandate, createWish, inFuture } from '../helpers/fixtures.js'
import { getPayment, holding, listPayments, pay, payRaw, paymentRows } from '../helpers/payments.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Payments and refunds through HTTP, on every store: contract section 6 (the mandate rules in their
 * order, the sandbox processor, settlement, refunds), the list rules of section 1, the errors of
 * section 2, the events of section 7, and the concurrency guarantees of section 6. This file:
 * creating a payment and the mandate rules, in their order.
 */

const PAYMENT_ID = /^pay_[0-9A-Za-z]{16,}$/
/** The settlement delay this suite's app runs with. */
const SETTLE_MS = 1000

for (const kind of storeKinds()) {
  describe(`payments: create and mandate rules (${kind.name})`, () => {
    let t: TestApp
    // A generous rate limit: the concurrency tests send 150 requests at once with one key.
    before(async () => { t = await startTestApp(kind, { SANDBOX_SETTLEMENT_DELAY_MS: String(SETTLE_MS), RATE_LIMIT_PER_SECOND: '100000' }) })
    after(async () => { await t.close() })

    // ---------------------------------------------------------------- create

    test('POST /payments 201: full shape; protocol_type and wish_id come from the mandate', async () => {
      const a = await t.account()
      const wish = await createWish(a, { query: 'a kettle', protocol: 'acp', budget: { max: 100, currency: 'USD' } })
      const m = await createMandate(t, a, { protocol: 'acp', wish_id: wish.id, max_amount: 5000 })
      const before = t.clock.now().toISOString()
      const res = await payRaw(a, { mandate_id: m.id, amount: 2500, currency: 'usd', metadata: { order: 'A-1' } })
      const afterIso = t.clock.now().toISOString()
      assert.equal(res.status, 201, res.raw)
      assertEnvelopeHeaders(res)
      assert.deepEqual(Object.keys(res.body), ['data'])
      const p = res.body.data
      assert.match(p.id, PAYMENT_ID)
      assert.match(p.created_at, ISO_MS)
      assert.match(p.updated_at, ISO_MS)
      assert.ok(p.created_at >= before && p.created_at <= afterIso, `${p.created_at} within [${before}, ${afterIso}]`)
      assert.deepEqual(p, {
        id: p.id,
        mandate_id: m.id,
        wish_id: wish.id,
        amount: 2500,
        currency: 'USD',
        status: 'succeeded',
        protocol_type: 'acp',
        payment_method: 'card',
        amount_refunded: 0,
        failure_code: null,
        failure_message: null,
        metadata: { order: 'A-1' },
        created_at: p.created_at,
        updated_at: p.updated_at,
        ap2: null,
      })
      assert.deepEqual(await getPayment(a, p.id), p, 'what was stored is what was returned')
      assert.deepEqual(await holding(a, m.id), { status: 'consumed', amount_used: 2500, uses_count: 1 })

      const plain = await createMandate(t, a, { usage: 'multi_use', budget_amount: 10_000 })
      const q = await pay(a, { mandate_id: plain.id, amount: 1 })
      assert.equal(q.wish_id, null)
      assert.equal(q.protocol_type, 'ap2')
      assert.equal(q.currency, 'USD', 'currency defaults to USD')
      assert.deepEqual(q.metadata, {})
      assert.equal(q.payment_method, 'card', 'payment_method defaults to card')
      assert.equal((await pay(a, { mandate_id: plain.id, amount: 2, currency: 'USD' })).currency, 'USD')
      assert.equal((await pay(a, { mandate_id: plain.id, amount: 3, currency: 'uSd' })).currency, 'USD')
      assert.deepEqual(await holding(a, plain.id), { status: 'active', amount_used: 6, uses_count: 3 })

      const eur = await createMandate(t, a, { currency: 'EUR' })
      assert.equal((await pay(a, { mandate_id: eur.id, amount: 100, currency: 'eur' })).currency, 'EUR')

      const top = await createMandate(t, a, { max_amount: 1e12 })
      assert.equal((await pay(a, { mandate_id: top.id, amount: 1e12 })).amount, 1e12, '10^12 is accepted')
    })

    test('POST /payments validation: amount, payment_method, currency, members; nothing is charged', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { usage: 'multi_use', max_amount: 1e12, budget_amount: 1e12 })
      const cases: Array<[string, Record<string, unknown>, string, string]> = [
        ['amount missing', { mandate_id: m.id }, 'amount', 'parameter_missing'],
        ['amount 0', { mandate_id: m.id, amount: 0 }, 'amount', 'parameter_invalid'],
        ['amount -1', { mandate_id: m.id, amount: -1 }, 'amount', 'parameter_invalid'],
        ['amount 1.5', { mandate_id: m.id, amount: 1.5 }, 'amount', 'parameter_invalid'],
        ['amount a string', { mandate_id: m.id, amount: '100' }, 'amount', 'parameter_invalid'],
        ['amount 10^12+1', { mandate_id: m.id, amount: 1e12 + 1 }, 'amount', 'parameter_invalid'],
        ['amount null', { mandate_id: m.id, amount: null }, 'amount', 'parameter_invalid'],
        ['mandate_id missing', { amount: 100 }, 'mandate_id', 'parameter_missing'],
        ['payment_method unknown', { mandate_id: m.id, amount: 100, payment_method: 'cash' }, 'payment_method', 'parameter_invalid'],
        ['payment_method empty', { mandate_id: m.id, amount: 100, payment_method: '' }, 'payment_method', 'parameter_invalid'],
        ['payment_method upper-case', { mandate_id: m.id, amount: 100, payment_method: 'CARD' }, 'payment_method', 'parameter_invalid'],
        ['currency unknown', { mandate_id: m.id, amount: 100, currency: 'XYZ' }, 'currency', 'parameter_invalid'],
        ['currency not a code', { mandate_id: m.id, amount: 100, currency: 'dollars' }, 'currency', 'parameter_invalid'],
        ['unknown member', { mandate_id: m.id, amount: 100, colour: 'red' }, 'colour', 'parameter_unknown'],
        ['status is not settable', { mandate_id: m.id, amount: 100, status: 'succeeded' }, 'status', 'parameter_unknown'],
      ]
      for (const [name, body, param, code] of cases) {
        const res = await payRaw(a, body)
        assert.doesNotThrow(() => assertInvalid(res, param, code), `${name}: ${res.raw}`)
      }
      assert.equal((await listPayments(a)).meta.total, 0)
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 0, uses_count: 0 })
    })

    test('POST /payments with a read key: 403 insufficient_scope', async () => {
      const a = await t.account()
      const m = await createMandate(t, a)
      const res = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: randomUUID() }, { key: a.readKey })
      assertError(res, 403, 'permission_error', 'insufficient_scope')
      assert.equal((await listPayments(a)).meta.total, 0)
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 0, uses_count: 0 })
    })

    // ---------------------------------------------------------------- mandate rules

    test('422 mandate_not_found: unknown id, and another account\'s mandate', async () => {
      const a = await t.account()
      const b = await t.account()
      assertPaymentError(await payRaw(a, { mandate_id: 'mdt_01aaaaaaaaaaaaaaaaaaaaaaaa', amount: 100 }), 'mandate_not_found')
      assertPaymentError(await payRaw(a, { mandate_id: 'nope', amount: 100 }), 'mandate_not_found')
      const theirs = await createMandate(t, b)
      assertPaymentError(await payRaw(a, { mandate_id: theirs.id, amount: 100 }), 'mandate_not_found')
      assert.deepEqual(await holding(b, theirs.id), { status: 'active', amount_used: 0, uses_count: 0 })
      assert.equal((await listPayments(a)).meta.total, 0)
      assert.equal((await listPayments(b)).meta.total, 0)
    })

    test('422 mandate_revoked', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { usage: 'multi_use', budget_amount: 10_000 })
      await pay(a, { mandate_id: m.id, amount: 100 })
      assert.equal((await a.request('POST', `/mandates/${m.id}/revoke`, {})).status, 200)
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 100 }), 'mandate_revoked')
      assert.deepEqual(await holding(a, m.id), { status: 'revoked', amount_used: 100, uses_count: 1 })
      assert.equal((await paymentRows(t, m.id)).length, 1)
    })

    test('422 mandate_expired', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { expires_at: inFuture(t, 1000) })
      t.clock.advance(1500)
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 100 }), 'mandate_expired')
      assert.deepEqual(await holding(a, m.id), { status: 'expired', amount_used: 0, uses_count: 0 })
      assert.equal((await paymentRows(t, m.id)).length, 0)
    })

    test('422 mandate_not_yet_valid before not_before; pays once it is reached', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { not_before: inFuture(t, 60_000) })
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 100 }), 'mandate_not_yet_valid')
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 0, uses_count: 0 })
      t.clock.advance(61_000)
      assert.equal((await pay(a, { mandate_id: m.id, amount: 100 })).status, 'succeeded')
    })

    test('422 mandate_consumed: a second payment on a single_use mandate after a success', async () => {
      const a = await t.account()
      const m = await createMandate(t, a)
      const first = await pay(a, { mandate_id: m.id, amount: 100 })
      assert.equal(first.status, 'succeeded')
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 100 }), 'mandate_consumed')
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 1 }), 'mandate_consumed')
      assert.deepEqual(await holding(a, m.id), { status: 'consumed', amount_used: 100, uses_count: 1 })
      assert.equal((await paymentRows(t, m.id)).length, 1)
    })

    test('422 currency_mismatch', async () => {
      const a = await t.account()
      const m = await createMandate(t, a)
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 100, currency: 'EUR' }), 'currency_mismatch')
      const jpy = await createMandate(t, a, { currency: 'JPY' })
      assertPaymentError(await payRaw(a, { mandate_id: jpy.id, amount: 100 }), 'currency_mismatch')
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 0, uses_count: 0 })
      assert.equal((await listPayments(a)).meta.total, 0)
    })

    test('422 amount_exceeds_mandate: amount above max_amount', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { max_amount: 500, budget_amount: 5000, usage: 'multi_use' })
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 501 }), 'amount_exceeds_mandate')
      assert.equal((await pay(a, { mandate_id: m.id, amount: 500 })).status, 'succeeded')
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 500, uses_count: 1 })
    })

    test('422 mandate_budget_exceeded: amount_used + amount above budget_amount', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { max_amount: 500, budget_amount: 800, usage: 'multi_use' })
      await pay(a, { mandate_id: m.id, amount: 500 })
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 301 }), 'mandate_budget_exceeded')
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 500, uses_count: 1 })
      await pay(a, { mandate_id: m.id, amount: 300 })
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 1 }), 'mandate_budget_exceeded')
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 800, uses_count: 2 })
      assert.equal((await paymentRows(t, m.id)).length, 2)
    })

    test('when several rules fail, the earliest in the contract\'s order is reported', async () => {
      const a = await t.account()
      const b = await t.account()
      // Every other rule broken too: another account's revoked mandate is still not found.
      const theirs = await createMandate(t, b, { max_amount: 100 })
      assert.equal((await b.request('POST', `/mandates/${theirs.id}/revoke`, {})).status, 200)
      assertPaymentError(await payRaw(a, { mandate_id: theirs.id, amount: 500, currency: 'EUR' }), 'mandate_not_found')

      // revoked before expired, currency and amount
      const revoked = await createMandate(t, a, { max_amount: 100, expires_at: inFuture(t, 1000) })
      assert.equal((await a.request('POST', `/mandates/${revoked.id}/revoke`, {})).status, 200)
      // revoked before not yet valid
      const revokedEarly = await createMandate(t, a, { not_before: inFuture(t, 60_000) })
      assert.equal((await a.request('POST', `/mandates/${revokedEarly.id}/revoke`, {})).status, 200)
      assertPaymentError(await payRaw(a, { mandate_id: revokedEarly.id, amount: 100 }), 'mandate_revoked')
      // not yet valid before currency and amount
      const early = await createMandate(t, a, { max_amount: 100, not_before: inFuture(t, 30_000) })
      assertPaymentError(await payRaw(a, { mandate_id: early.id, amount: 500, currency: 'EUR' }), 'mandate_not_yet_valid')
      // consumed before currency and amount
      const consumed = await createMandate(t, a, { max_amount: 100 })
      await pay(a, { mandate_id: consumed.id, amount: 100 })
      assertPaymentError(await payRaw(a, { mandate_id: consumed.id, amount: 500, currency: 'EUR' }), 'mandate_consumed')
      // currency before amount and budget
      const used = await createMandate(t, a, { max_amount: 500, budget_amount: 600, usage: 'multi_use' })
      await pay(a, { mandate_id: used.id, amount: 500 })
      assertPaymentError(await payRaw(a, { mandate_id: used.id, amount: 501, currency: 'EUR' }), 'currency_mismatch')
      // amount before budget (501 > max 500, and 500 + 501 > 600)
      assertPaymentError(await payRaw(a, { mandate_id: used.id, amount: 501 }), 'amount_exceeds_mandate')
      assertPaymentError(await payRaw(a, { mandate_id: used.id, amount: 101 }), 'mandate_budget_exceeded')

      // expired before currency, amount and budget
      const expiring = await createMandate(t, a, { max_amount: 100, expires_at: inFuture(t, 1000) })
      t.clock.advance(1500)
      assertPaymentError(await payRaw(a, { mandate_id: expiring.id, amount: 500, currency: 'EUR' }), 'mandate_expired')
      // still revoked once its time has passed too
      assertPaymentError(await payRaw(a, { mandate_id: revoked.id, amount: 500, currency: 'EUR' }), 'mandate_revoked')
    })
  })
}
