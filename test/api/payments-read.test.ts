import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { assertInvalid, assertNotFound, ids, newestFirst } from '../helpers/assertions.js'
import { createMandate, createWish } from '../helpers/fixtures.js'
import { getPayment, listPayments, pay } from '../helpers/payments.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Payments and refunds through HTTP, on every store: contract section 6 (the mandate rules in their
 * order, the sandbox processor, settlement, refunds), the list rules of section 1, the errors of
 * section 2, the events of section 7, and the concurrency guarantees of section 6. This file:
 * reading and listing payments.
 */

/** The settlement delay this suite's app runs with. */
const SETTLE_MS = 1000

for (const kind of storeKinds()) {
  describe(`payments: read and list (${kind.name})`, () => {
    let t: TestApp
    // A generous rate limit: the concurrency tests send 150 requests at once with one key.
    before(async () => { t = await startTestApp(kind, { SANDBOX_SETTLEMENT_DELAY_MS: String(SETTLE_MS), RATE_LIMIT_PER_SECOND: '100000' }) })
    after(async () => { await t.close() })

    // ---------------------------------------------------------------- read

    test('GET /payments/:id 200; unknown and another account\'s 404', async () => {
      const a = await t.account()
      const b = await t.account()
      const m = await createMandate(t, a)
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
      const theirs = await createMandate(t, b)
      await pay(b, { mandate_id: theirs.id, amount: 1 })
      const wish = await createWish(a, { query: 'a kettle' })
      const m1 = await createMandate(t, a, { usage: 'multi_use', budget_amount: 50_000, wish_id: wish.id })
      const m2 = await createMandate(t, a, { usage: 'multi_use', budget_amount: 50_000 })
      const made: any[] = []
      const methods = ['card', 'test_card_declined', 'wallet', 'bank_transfer', 'card', 'test_insufficient_funds']
      for (let i = 0; i < methods.length; i++) {
        if (i % 2 === 0) t.clock.advance(1000)
        made.push(await pay(a, { mandate_id: i < 3 ? m1.id : m2.id, amount: 100 + i, payment_method: methods[i] }))
      }
      const all = await listPayments(a)
      assert.deepEqual(all.meta, { total: 6, limit: 10, offset: 0, has_more: false })
      assert.deepEqual(ids(all.data), ids(newestFirst(made)))
      assert.deepEqual(ids(all.data), ids([...made].reverse()))
      assert.deepEqual(all.data[0], await getPayment(a, made[5].id))

      const page = await listPayments(a, '?limit=2&offset=2')
      assert.deepEqual(page.meta, { total: 6, limit: 2, offset: 2, has_more: true })
      assert.deepEqual(ids(page.data), [made[3].id, made[2].id])

      const succeeded = await listPayments(a, '?status=succeeded')
      assert.deepEqual(ids(succeeded.data), [made[4].id, made[2].id, made[0].id])
      assert.equal(succeeded.meta.total, 3)
      assert.deepEqual(ids((await listPayments(a, '?status=failed')).data), [made[5].id, made[1].id])
      assert.deepEqual(ids((await listPayments(a, '?status=pending')).data), [made[3].id])
      assert.deepEqual((await listPayments(a, '?status=refunded')).meta.total, 0)

      assert.deepEqual(ids((await listPayments(a, `?mandate_id=${m1.id}`)).data), [made[2].id, made[1].id, made[0].id])
      assert.deepEqual(ids((await listPayments(a, `?mandate_id=${m2.id}`)).data), [made[5].id, made[4].id, made[3].id])
      assert.deepEqual(ids((await listPayments(a, `?mandate_id=${m2.id}&status=failed`)).data), [made[5].id])
      const byWish = await listPayments(a, `?wish_id=${wish.id}`)
      assert.deepEqual(byWish.meta, { total: 3, limit: 10, offset: 0, has_more: false })
      assert.deepEqual(ids(byWish.data), [made[2].id, made[1].id, made[0].id])
      for (const p of byWish.data) assert.equal(p.wish_id, wish.id)
      assert.deepEqual(await listPayments(a, `?mandate_id=${theirs.id}`), { data: [], meta: { total: 0, limit: 10, offset: 0, has_more: false } })

      assertInvalid(await a.request('GET', '/payments?status=bogus'), 'status')
      assertInvalid(await a.request('GET', '/payments?status=SUCCEEDED'), 'status')
      assertInvalid(await a.request('GET', '/payments?limit=0'), 'limit')
      assertInvalid(await a.request('GET', '/payments?offset=-1'), 'offset')
      assertInvalid(await a.request('GET', '/payments?colour=red'), 'colour', 'parameter_unknown')
    })
  })
}
