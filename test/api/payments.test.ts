import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { type Response, startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertEnvelopeHeaders, assertError, assertInvalid, assertNotFound, assertPaymentError, ids, ISO_MS, newestFirst, requestIdOf } from '../helpers/assertions.js'
import { createMandate, createWish, eventsOf, getData, getList, getMandate, inFuture } from '../helpers/fixtures.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Payments and refunds through HTTP, on every store: contract section 6 (the mandate rules in their
 * order, the sandbox processor, settlement, refunds), the list rules of section 1, the errors of
 * section 2, the events of section 7, and the concurrency guarantees of section 6.
 */

const PAYMENT_ID = /^pay_[0-9A-Za-z]{16,}$/
const REFUND_ID = /^re_[0-9A-Za-z]{16,}$/
/** The settlement delay this suite's app runs with. */
const SETTLE_MS = 1000

for (const kind of storeKinds()) {
  describe(`payments (${kind.name})`, () => {
    let t: TestApp
    // A generous rate limit: the concurrency tests send 150 requests at once with one key.
    before(async () => { t = await startTestApp(kind, { SANDBOX_SETTLEMENT_DELAY_MS: String(SETTLE_MS), RATE_LIMIT_PER_SECOND: '100000' }) })
    after(async () => { await t.close() })

    const mandate = (a: TestAccount, body: Record<string, unknown> = {}) => createMandate(t, a, body)
    const get = (a: TestAccount, id: string) => getData(a, `/payments/${id}`)
    const list = (a: TestAccount, qs = '') => getList(a, `/payments${qs}`)

    function payRaw(a: TestAccount, body: Record<string, unknown>): Promise<Response> {
      return a.request('POST', '/payments', { idempotency_key: randomUUID(), ...body })
    }

    async function pay(a: TestAccount, body: Record<string, unknown>): Promise<any> {
      const res = await payRaw(a, body)
      assert.equal(res.status, 201, res.raw)
      return res.body.data
    }

    function refundRaw(a: TestAccount, paymentId: string, body: Record<string, unknown> = {}): Promise<Response> {
      return a.request('POST', `/payments/${paymentId}/refunds`, { idempotency_key: randomUUID(), ...body })
    }

    async function paymentRows(mandateId: string) {
      return t.store.db.kysely.selectFrom('payments').selectAll().where('mandate_id', '=', mandateId).execute()
    }

    /** What a mandate holds: the parts a payment changes. */
    async function holding(a: TestAccount, id: string) {
      const m = await getMandate(a, id)
      return { status: m.status, amount_used: m.amount_used, uses_count: m.uses_count }
    }

    // ---------------------------------------------------------------- create

    test('POST /payments 201: full shape; protocol_type and wish_id come from the mandate', async () => {
      const a = await t.account()
      const wish = await createWish(a, { query: 'a kettle', protocol: 'acp', budget: { max: 100, currency: 'USD' } })
      const m = await mandate(a, { protocol: 'acp', wish_id: wish.id, max_amount: 5000 })
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
      })
      assert.deepEqual(await get(a, p.id), p, 'what was stored is what was returned')
      assert.deepEqual(await holding(a, m.id), { status: 'consumed', amount_used: 2500, uses_count: 1 })

      const plain = await mandate(a, { usage: 'multi_use', budget_amount: 10_000 })
      const q = await pay(a, { mandate_id: plain.id, amount: 1 })
      assert.equal(q.wish_id, null)
      assert.equal(q.protocol_type, 'ap2')
      assert.equal(q.currency, 'USD', 'currency defaults to USD')
      assert.deepEqual(q.metadata, {})
      assert.equal(q.payment_method, 'card', 'payment_method defaults to card')
      assert.equal((await pay(a, { mandate_id: plain.id, amount: 2, currency: 'USD' })).currency, 'USD')
      assert.equal((await pay(a, { mandate_id: plain.id, amount: 3, currency: 'uSd' })).currency, 'USD')
      assert.deepEqual(await holding(a, plain.id), { status: 'active', amount_used: 6, uses_count: 3 })

      const eur = await mandate(a, { currency: 'EUR' })
      assert.equal((await pay(a, { mandate_id: eur.id, amount: 100, currency: 'eur' })).currency, 'EUR')

      const top = await mandate(a, { max_amount: 1e12 })
      assert.equal((await pay(a, { mandate_id: top.id, amount: 1e12 })).amount, 1e12, '10^12 is accepted')
    })

    test('POST /payments validation: amount, payment_method, currency, members; nothing is charged', async () => {
      const a = await t.account()
      const m = await mandate(a, { usage: 'multi_use', max_amount: 1e12, budget_amount: 1e12 })
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
      assert.equal((await list(a)).meta.total, 0)
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 0, uses_count: 0 })
    })

    test('POST /payments with a read key: 403 insufficient_scope', async () => {
      const a = await t.account()
      const m = await mandate(a)
      const res = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: randomUUID() }, { key: a.readKey })
      assertError(res, 403, 'permission_error', 'insufficient_scope')
      assert.equal((await list(a)).meta.total, 0)
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 0, uses_count: 0 })
    })

    // ---------------------------------------------------------------- mandate rules

    test('422 mandate_not_found: unknown id, and another account\'s mandate', async () => {
      const a = await t.account()
      const b = await t.account()
      assertPaymentError(await payRaw(a, { mandate_id: 'mdt_01aaaaaaaaaaaaaaaaaaaaaaaa', amount: 100 }), 'mandate_not_found')
      assertPaymentError(await payRaw(a, { mandate_id: 'nope', amount: 100 }), 'mandate_not_found')
      const theirs = await mandate(b)
      assertPaymentError(await payRaw(a, { mandate_id: theirs.id, amount: 100 }), 'mandate_not_found')
      assert.deepEqual(await holding(b, theirs.id), { status: 'active', amount_used: 0, uses_count: 0 })
      assert.equal((await list(a)).meta.total, 0)
      assert.equal((await list(b)).meta.total, 0)
    })

    test('422 mandate_revoked', async () => {
      const a = await t.account()
      const m = await mandate(a, { usage: 'multi_use', budget_amount: 10_000 })
      await pay(a, { mandate_id: m.id, amount: 100 })
      assert.equal((await a.request('POST', `/mandates/${m.id}/revoke`, {})).status, 200)
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 100 }), 'mandate_revoked')
      assert.deepEqual(await holding(a, m.id), { status: 'revoked', amount_used: 100, uses_count: 1 })
      assert.equal((await paymentRows(m.id)).length, 1)
    })

    test('422 mandate_expired', async () => {
      const a = await t.account()
      const m = await mandate(a, { expires_at: inFuture(t, 1000) })
      t.clock.advance(1500)
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 100 }), 'mandate_expired')
      assert.deepEqual(await holding(a, m.id), { status: 'expired', amount_used: 0, uses_count: 0 })
      assert.equal((await paymentRows(m.id)).length, 0)
    })

    test('422 mandate_not_yet_valid before not_before; pays once it is reached', async () => {
      const a = await t.account()
      const m = await mandate(a, { not_before: inFuture(t, 60_000) })
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 100 }), 'mandate_not_yet_valid')
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 0, uses_count: 0 })
      t.clock.advance(61_000)
      assert.equal((await pay(a, { mandate_id: m.id, amount: 100 })).status, 'succeeded')
    })

    test('422 mandate_consumed: a second payment on a single_use mandate after a success', async () => {
      const a = await t.account()
      const m = await mandate(a)
      const first = await pay(a, { mandate_id: m.id, amount: 100 })
      assert.equal(first.status, 'succeeded')
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 100 }), 'mandate_consumed')
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 1 }), 'mandate_consumed')
      assert.deepEqual(await holding(a, m.id), { status: 'consumed', amount_used: 100, uses_count: 1 })
      assert.equal((await paymentRows(m.id)).length, 1)
    })

    test('422 currency_mismatch', async () => {
      const a = await t.account()
      const m = await mandate(a)
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 100, currency: 'EUR' }), 'currency_mismatch')
      const jpy = await mandate(a, { currency: 'JPY' })
      assertPaymentError(await payRaw(a, { mandate_id: jpy.id, amount: 100 }), 'currency_mismatch')
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 0, uses_count: 0 })
      assert.equal((await list(a)).meta.total, 0)
    })

    test('422 amount_exceeds_mandate: amount above max_amount', async () => {
      const a = await t.account()
      const m = await mandate(a, { max_amount: 500, budget_amount: 5000, usage: 'multi_use' })
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 501 }), 'amount_exceeds_mandate')
      assert.equal((await pay(a, { mandate_id: m.id, amount: 500 })).status, 'succeeded')
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 500, uses_count: 1 })
    })

    test('422 mandate_budget_exceeded: amount_used + amount above budget_amount', async () => {
      const a = await t.account()
      const m = await mandate(a, { max_amount: 500, budget_amount: 800, usage: 'multi_use' })
      await pay(a, { mandate_id: m.id, amount: 500 })
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 301 }), 'mandate_budget_exceeded')
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 500, uses_count: 1 })
      await pay(a, { mandate_id: m.id, amount: 300 })
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 1 }), 'mandate_budget_exceeded')
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 800, uses_count: 2 })
      assert.equal((await paymentRows(m.id)).length, 2)
    })

    test('when several rules fail, the earliest in the contract\'s order is reported', async () => {
      const a = await t.account()
      const b = await t.account()
      // Every other rule broken too: another account's revoked mandate is still not found.
      const theirs = await mandate(b, { max_amount: 100 })
      assert.equal((await b.request('POST', `/mandates/${theirs.id}/revoke`, {})).status, 200)
      assertPaymentError(await payRaw(a, { mandate_id: theirs.id, amount: 500, currency: 'EUR' }), 'mandate_not_found')

      // revoked before expired, currency and amount
      const revoked = await mandate(a, { max_amount: 100, expires_at: inFuture(t, 1000) })
      assert.equal((await a.request('POST', `/mandates/${revoked.id}/revoke`, {})).status, 200)
      // revoked before not yet valid
      const revokedEarly = await mandate(a, { not_before: inFuture(t, 60_000) })
      assert.equal((await a.request('POST', `/mandates/${revokedEarly.id}/revoke`, {})).status, 200)
      assertPaymentError(await payRaw(a, { mandate_id: revokedEarly.id, amount: 100 }), 'mandate_revoked')
      // not yet valid before currency and amount
      const early = await mandate(a, { max_amount: 100, not_before: inFuture(t, 30_000) })
      assertPaymentError(await payRaw(a, { mandate_id: early.id, amount: 500, currency: 'EUR' }), 'mandate_not_yet_valid')
      // consumed before currency and amount
      const consumed = await mandate(a, { max_amount: 100 })
      await pay(a, { mandate_id: consumed.id, amount: 100 })
      assertPaymentError(await payRaw(a, { mandate_id: consumed.id, amount: 500, currency: 'EUR' }), 'mandate_consumed')
      // currency before amount and budget
      const used = await mandate(a, { max_amount: 500, budget_amount: 600, usage: 'multi_use' })
      await pay(a, { mandate_id: used.id, amount: 500 })
      assertPaymentError(await payRaw(a, { mandate_id: used.id, amount: 501, currency: 'EUR' }), 'currency_mismatch')
      // amount before budget (501 > max 500, and 500 + 501 > 600)
      assertPaymentError(await payRaw(a, { mandate_id: used.id, amount: 501 }), 'amount_exceeds_mandate')
      assertPaymentError(await payRaw(a, { mandate_id: used.id, amount: 101 }), 'mandate_budget_exceeded')

      // expired before currency, amount and budget
      const expiring = await mandate(a, { max_amount: 100, expires_at: inFuture(t, 1000) })
      t.clock.advance(1500)
      assertPaymentError(await payRaw(a, { mandate_id: expiring.id, amount: 500, currency: 'EUR' }), 'mandate_expired')
      // still revoked once its time has passed too
      assertPaymentError(await payRaw(a, { mandate_id: revoked.id, amount: 500, currency: 'EUR' }), 'mandate_revoked')
    })

    // ---------------------------------------------------------------- sandbox processor

    test('sandbox: card and wallet succeed; declines are 201 failed with their failure_code', async () => {
      const a = await t.account()
      const m = await mandate(a, { usage: 'multi_use', max_amount: 1000, budget_amount: 10_000 })
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
      assert.deepEqual(await get(a, declined.id), declined)

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
      const m = await mandate(a, { max_amount: 1000 })
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
      const m = await mandate(a, { max_amount: 2000 })
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
      const processing = await get(a, p.id)
      assert.equal(processing.status, 'processing')
      assertPaymentError(await refundRaw(a, p.id), 'payment_not_refundable')

      t.clock.advance(SETTLE_MS / 2)
      await t.jobs.runOnce()
      assert.equal((await get(a, p.id)).status, 'processing', 'not before the settlement delay')

      t.clock.advance(SETTLE_MS / 2)
      await t.jobs.runOnce()
      const done = await get(a, p.id)
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
      assert.deepEqual(await get(a, p.id), done)
      assert.equal((await eventsOf(t, a.id, p.id)).length, 3)
    })

    test('sandbox: test_bank_transfer_failed ends failed and releases the hold', async () => {
      const a = await t.account()
      const m = await mandate(a, { max_amount: 2000 })
      const p = await pay(a, { mandate_id: m.id, amount: 700, payment_method: 'test_bank_transfer_failed' })
      assert.equal(p.status, 'pending')
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 700, uses_count: 1 })
      await t.jobs.runOnce()
      assert.equal((await get(a, p.id)).status, 'processing')
      t.clock.advance(SETTLE_MS)
      await t.jobs.runOnce()
      const done = await get(a, p.id)
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
      const m = await mandate(a)
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
      const multi = await mandate(a, { usage: 'multi_use', budget_amount: 5000 })
      await pay(a, { mandate_id: multi.id, amount: 5000 })
      assert.deepEqual((await eventsOf(t, a.id, multi.id)).map((e) => e.type), ['mandate.created'])
      assert.equal((await getMandate(a, multi.id)).status, 'active')
    })

    // ---------------------------------------------------------------- read

    test('GET /payments/:id 200; unknown and another account\'s 404', async () => {
      const a = await t.account()
      const b = await t.account()
      const m = await mandate(a)
      const p = await pay(a, { mandate_id: m.id, amount: 100 })
      const res = await a.request('GET', `/payments/${p.id}`)
      assert.equal(res.status, 200, res.raw)
      assert.deepEqual(res.body, { data: p })
      assertNotFound(await b.request('GET', `/payments/${p.id}`))
      assertNotFound(await a.request('GET', '/payments/pay_01aaaaaaaaaaaaaaaaaaaaaaaa'))
      assertNotFound(await a.request('GET', '/payments/nope'))
    })

    test('GET /payments: newest first, meta, filters status, mandate_id and wish_id; bad filters 400', async () => {
      const a = await t.account()
      const b = await t.account()
      const theirs = await mandate(b)
      await pay(b, { mandate_id: theirs.id, amount: 1 })
      const wish = await createWish(a, { query: 'a kettle' })
      const m1 = await mandate(a, { usage: 'multi_use', budget_amount: 50_000, wish_id: wish.id })
      const m2 = await mandate(a, { usage: 'multi_use', budget_amount: 50_000 })
      const made: any[] = []
      const methods = ['card', 'test_card_declined', 'wallet', 'bank_transfer', 'card', 'test_insufficient_funds']
      for (let i = 0; i < methods.length; i++) {
        if (i % 2 === 0) t.clock.advance(1000)
        made.push(await pay(a, { mandate_id: i < 3 ? m1.id : m2.id, amount: 100 + i, payment_method: methods[i] }))
      }
      const all = await list(a)
      assert.deepEqual(all.meta, { total: 6, limit: 10, offset: 0 })
      assert.deepEqual(ids(all.data), ids(newestFirst(made)))
      assert.deepEqual(ids(all.data), ids([...made].reverse()))
      assert.deepEqual(all.data[0], await get(a, made[5].id))

      const page = await list(a, '?limit=2&offset=2')
      assert.deepEqual(page.meta, { total: 6, limit: 2, offset: 2 })
      assert.deepEqual(ids(page.data), [made[3].id, made[2].id])

      const succeeded = await list(a, '?status=succeeded')
      assert.deepEqual(ids(succeeded.data), [made[4].id, made[2].id, made[0].id])
      assert.equal(succeeded.meta.total, 3)
      assert.deepEqual(ids((await list(a, '?status=failed')).data), [made[5].id, made[1].id])
      assert.deepEqual(ids((await list(a, '?status=pending')).data), [made[3].id])
      assert.deepEqual((await list(a, '?status=refunded')).meta.total, 0)

      assert.deepEqual(ids((await list(a, `?mandate_id=${m1.id}`)).data), [made[2].id, made[1].id, made[0].id])
      assert.deepEqual(ids((await list(a, `?mandate_id=${m2.id}`)).data), [made[5].id, made[4].id, made[3].id])
      assert.deepEqual(ids((await list(a, `?mandate_id=${m2.id}&status=failed`)).data), [made[5].id])
      const byWish = await list(a, `?wish_id=${wish.id}`)
      assert.deepEqual(byWish.meta, { total: 3, limit: 10, offset: 0 })
      assert.deepEqual(ids(byWish.data), [made[2].id, made[1].id, made[0].id])
      for (const p of byWish.data) assert.equal(p.wish_id, wish.id)
      assert.deepEqual(await list(a, `?mandate_id=${theirs.id}`), { data: [], meta: { total: 0, limit: 10, offset: 0 } })

      assertInvalid(await a.request('GET', '/payments?status=bogus'), 'status')
      assertInvalid(await a.request('GET', '/payments?status=SUCCEEDED'), 'status')
      assertInvalid(await a.request('GET', '/payments?limit=0'), 'limit')
      assertInvalid(await a.request('GET', '/payments?offset=-1'), 'offset')
      assertInvalid(await a.request('GET', '/payments?colour=red'), 'colour', 'parameter_unknown')
    })

    // ---------------------------------------------------------------- refunds

    test('refunds: partial, then the rest by default; the payment becomes refunded; the mandate keeps its amount_used', async () => {
      const a = await t.account()
      const m = await mandate(a, { max_amount: 1000 })
      const p = await pay(a, { mandate_id: m.id, amount: 1000 })

      const first = await refundRaw(a, p.id, { amount: 300, reason: 'requested_by_customer' })
      assert.equal(first.status, 201, first.raw)
      const r1 = first.body.data
      assert.match(r1.id, REFUND_ID)
      assert.match(r1.created_at, ISO_MS)
      assert.deepEqual(r1, { id: r1.id, payment_id: p.id, amount: 300, reason: 'requested_by_customer', status: 'succeeded', created_at: r1.created_at })
      const partly = await get(a, p.id)
      assert.equal(partly.status, 'succeeded')
      assert.equal(partly.amount_refunded, 300)

      t.clock.advance(1000)
      const second = await refundRaw(a, p.id)
      assert.equal(second.status, 201, second.raw)
      const r2 = second.body.data
      assert.deepEqual(r2, { id: r2.id, payment_id: p.id, amount: 700, reason: null, status: 'succeeded', created_at: r2.created_at })
      const full = await get(a, p.id)
      assert.equal(full.status, 'refunded')
      assert.equal(full.amount_refunded, 1000)
      assert.deepEqual(full, { ...p, status: 'refunded', amount_refunded: 1000, updated_at: full.updated_at })

      assertPaymentError(await refundRaw(a, p.id, { amount: 1 }), 'payment_not_refundable')
      assertPaymentError(await refundRaw(a, p.id), 'payment_not_refundable')

      // Refunds never give budget back.
      assert.deepEqual(await holding(a, m.id), { status: 'consumed', amount_used: 1000, uses_count: 1 })

      const listed = await a.request('GET', `/payments/${p.id}/refunds`)
      assert.equal(listed.status, 200, listed.raw)
      assert.deepEqual(listed.body, { data: [r2, r1], meta: { total: 2, limit: 10, offset: 0 } })
      const paged = await a.request('GET', `/payments/${p.id}/refunds?limit=1&offset=1`)
      assert.equal(paged.status, 200, paged.raw)
      assert.deepEqual(paged.body, { data: [r1], meta: { total: 2, limit: 1, offset: 1 } })

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
      const m = await mandate(a, { usage: 'multi_use', max_amount: 1000, budget_amount: 1000 })
      const p = await pay(a, { mandate_id: m.id, amount: 1000 })
      assert.equal((await refundRaw(a, p.id)).status, 201)
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 1000, uses_count: 1 })
      assertPaymentError(await payRaw(a, { mandate_id: m.id, amount: 1 }), 'mandate_budget_exceeded')
    })

    test('refunds: 422 payment_not_refundable for failed and pending payments; 422 refund_exceeds_payment; 404 unknown', async () => {
      const a = await t.account()
      const b = await t.account()
      const m = await mandate(a, { usage: 'multi_use', max_amount: 5000, budget_amount: 50_000 })
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
      const after = await get(a, p.id)
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
      assert.equal((await get(a, q.id)).amount_refunded, 0)

      const none = await a.request('GET', `/payments/${q.id}/refunds`)
      assert.equal(none.status, 200, none.raw)
      assert.deepEqual(none.body, { data: [], meta: { total: 0, limit: 10, offset: 0 } })
      assert.deepEqual((await eventsOf(t, a.id, failed.id)).map((e) => e.type), ['payment.created', 'payment.failed'])
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 2100, uses_count: 3 })
    })

    // ---------------------------------------------------------------- concurrency

    test('concurrency: 150 payments of 10 against a budget of 1000: exactly 100 succeed, 50 mandate_budget_exceeded', async () => {
      const a = await t.account()
      const m = await mandate(a, { usage: 'multi_use', max_amount: 10, budget_amount: 1000 })
      const answers = await Promise.all(Array.from({ length: 150 }, () => payRaw(a, { mandate_id: m.id, amount: 10 })))
      const ok = answers.filter((r) => r.status === 201)
      const refused = answers.filter((r) => r.status !== 201)
      assert.equal(ok.length, 100, `statuses: ${JSON.stringify(tally(answers))}`)
      for (const r of ok) assert.equal(r.body.data.status, 'succeeded')
      assert.equal(refused.length, 50)
      for (const r of refused) assertPaymentError(r, 'mandate_budget_exceeded')
      assert.equal(new Set(ok.map((r) => r.body.data.id)).size, 100)
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 1000, uses_count: 100 })
      const rows = await paymentRows(m.id)
      assert.equal(rows.length, 100)
      assert.equal(rows.reduce((sum, r) => sum + r.amount, 0), 1000)
    })

    test('concurrency: 20 payments on a single_use mandate: exactly one succeeds, the rest mandate_consumed', async () => {
      const a = await t.account()
      const m = await mandate(a, { max_amount: 500 })
      const answers = await Promise.all(Array.from({ length: 20 }, () => payRaw(a, { mandate_id: m.id, amount: 500 })))
      const ok = answers.filter((r) => r.status === 201)
      assert.equal(ok.length, 1, `statuses: ${JSON.stringify(tally(answers))}`)
      assert.equal(ok[0]!.body.data.status, 'succeeded')
      for (const r of answers.filter((x) => x.status !== 201)) assertPaymentError(r, 'mandate_consumed')
      assert.deepEqual(await holding(a, m.id), { status: 'consumed', amount_used: 500, uses_count: 1 })
      assert.equal((await paymentRows(m.id)).length, 1)
    })

    test('concurrency: 20 refunds of 100 on a payment of 1000: exactly 10 succeed, the rest 422', async () => {
      const a = await t.account()
      const m = await mandate(a, { max_amount: 1000 })
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
      const after = await get(a, p.id)
      assert.equal(after.amount_refunded, 1000)
      assert.equal(after.status, 'refunded')
      const refunds = await t.store.db.kysely.selectFrom('refunds').selectAll().where('payment_id', '=', p.id).execute()
      assert.equal(refunds.length, 10)
      assert.deepEqual(await holding(a, m.id), { status: 'consumed', amount_used: 1000, uses_count: 1 })
    })

    test('concurrency: 20 refunds of 300 on a payment of 1000: exactly 3 succeed, the rest refund_exceeds_payment', async () => {
      const a = await t.account()
      const m = await mandate(a, { max_amount: 1000 })
      const p = await pay(a, { mandate_id: m.id, amount: 1000 })
      const answers = await Promise.all(Array.from({ length: 20 }, () => refundRaw(a, p.id, { amount: 300 })))
      assert.equal(answers.filter((r) => r.status === 201).length, 3, `statuses: ${JSON.stringify(tally(answers))}`)
      for (const r of answers.filter((x) => x.status !== 201)) assertPaymentError(r, 'refund_exceeds_payment')
      const after = await get(a, p.id)
      assert.equal(after.amount_refunded, 900)
      assert.equal(after.status, 'succeeded')
      const rest = await refundRaw(a, p.id)
      assert.equal(rest.status, 201, rest.raw)
      assert.equal(rest.body.data.amount, 100)
      assert.equal((await get(a, p.id)).status, 'refunded')
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
