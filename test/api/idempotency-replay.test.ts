import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Response, startTestApp, type TestApp } from '../helpers/app.js'
import { assertError, requestIdOf } from '../helpers/assertions.js'
import { countEvents, DAY_MS, getMandate, inFuture } from '../helpers/fixtures.js'
import { assertFresh, assertReplay, keyRows, newKey, multiUseMandate, paymentCount, succeededPayment } from '../helpers/idempotency.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Idempotency through HTTP, on every store: contract section 5 (with the error envelope of section 2
 * and the payment operations of section 6). This file: the key's scope and fingerprint, replays, and concurrent requests with one key.
 */

for (const kind of storeKinds()) {
  describe(`idempotency: scope, fingerprint, replay, concurrency (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    // ---------------------------------------------------------------- scope and fingerprint

    test('scope is (account, key): one key used by two accounts makes two independent payments', async () => {
      const a = await t.account()
      const b = await t.account()
      const ma = await multiUseMandate(t, a)
      const mb = await multiUseMandate(t, b)
      const key = newKey('shared')
      const ra = await a.request('POST', '/payments', { mandate_id: ma.id, amount: 100, idempotency_key: key })
      const rb = await b.request('POST', '/payments', { mandate_id: mb.id, amount: 300, idempotency_key: key })
      assertFresh(ra, 201)
      assertFresh(rb, 201)
      assert.notEqual(ra.body.data.id, rb.body.data.id)
      assert.equal(ra.body.data.mandate_id, ma.id)
      assert.equal(rb.body.data.mandate_id, mb.id)
      assert.equal(rb.body.data.amount, 300)
      assert.equal(await paymentCount(t, a.id), 1)
      assert.equal(await paymentCount(t, b.id), 1)
      assert.equal((await getMandate(a, ma.id)).amount_used, 100)
      assert.equal((await getMandate(b, mb.id)).amount_used, 300)
      // Each account replays its own.
      assertReplay(await a.request('POST', '/payments', { mandate_id: ma.id, amount: 100, idempotency_key: key }), ra)
      assertReplay(await b.request('POST', '/payments', { mandate_id: mb.id, amount: 300, idempotency_key: key }), rb)
    })

    test('the fingerprint is taken after defaults: currency USD and payment_method card sent or not, in any order, replay', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a)
      const key = newKey()
      const first = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: key })
      assertFresh(first, 201)
      assert.equal(first.body.data.currency, 'USD')
      assert.equal(first.body.data.payment_method, 'card')
      assertReplay(await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, currency: 'USD', idempotency_key: key }), first)
      assertReplay(await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, payment_method: 'card', idempotency_key: key }), first)
      assertReplay(await a.request('POST', '/payments', { idempotency_key: key, payment_method: 'card', currency: 'USD', amount: 100, mandate_id: m.id }), first)
      assertReplay(await a.request('POST', '/payments', '{"amount":100,"mandate_id":"' + m.id + '","idempotency_key":"' + key + '"}'), first)
      assert.equal(await paymentCount(t, a.id), 1)
      assert.equal((await getMandate(a, m.id)).amount_used, 100)
    })

    test('defaults that depend on another member and currency case count as applied: such retries replay', async () => {
      const a = await t.account()
      const key = newKey()
      const expiresAt = inFuture(t, 30 * DAY_MS)
      const first = await a.request('POST', '/mandates', { protocol: 'ap2', max_amount: 500, expires_at: expiresAt, idempotency_key: key })
      assertFresh(first, 201)
      assert.equal(first.body.data.budget_amount, 500)
      assert.equal(first.body.data.usage, 'single_use')
      assertReplay(await a.request('POST', '/mandates', {
        protocol: 'ap2', max_amount: 500, budget_amount: 500, usage: 'single_use', currency: 'usd', expires_at: expiresAt, idempotency_key: key,
      }), first)
      const m = await multiUseMandate(t, a)
      const payKey = newKey()
      const paid = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, currency: 'usd', idempotency_key: payKey })
      assertFresh(paid, 201)
      assert.equal(paid.body.data.currency, 'USD')
      assertReplay(await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, currency: 'USD', idempotency_key: payKey }), paid)
      assertReplay(await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: payKey }), paid)
    })

    test('the same key with another request -> 422 idempotency_key_reused (other amount, other path, other member)', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a)
      const key = newKey()
      const first = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: key })
      assertFresh(first, 201)

      const reused = (res: Response) => {
        assertError(res, 422, 'idempotency_error', 'idempotency_key_reused', 'idempotency_key')
        assert.equal(res.headers['idempotent-replayed'], undefined)
      }
      reused(await a.request('POST', '/payments', { mandate_id: m.id, amount: 101, idempotency_key: key }))
      reused(await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, payment_method: 'wallet', idempotency_key: key }))
      reused(await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, metadata: { a: 'b' }, idempotency_key: key }))
      reused(await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, currency: 'EUR' }, { headers: { 'idempotency-key': key } }))
      // Another path with the same key.
      reused(await a.request('POST', `/payments/${first.body.data.id}/refunds`, { idempotency_key: key }))
      reused(await a.request('POST', '/wishes', { query: 'a kettle', idempotency_key: key }))
      reused(await a.request('POST', `/mandates/${m.id}/revoke`, { idempotency_key: key }))

      assert.equal(await paymentCount(t, a.id), 1)
      const after = await getMandate(a, m.id)
      assert.equal(after.status, 'active')
      assert.equal(after.amount_used, 100)
      const refunds = await a.request('GET', `/payments/${first.body.data.id}/refunds`)
      assert.equal(refunds.body.meta.total, 0)
      const wishes = await a.request('GET', '/wishes')
      assert.equal(wishes.body.meta.total, 0)
      // The original is still replayed.
      assertReplay(await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: key }), first)
    })

    test('the same key and body on another path (another object) -> 422 idempotency_key_reused', async () => {
      const a = await t.account()
      const m1 = await multiUseMandate(t, a)
      const m2 = await multiUseMandate(t, a)
      const key = newKey()
      const first = await a.request('POST', `/mandates/${m1.id}/revoke`, { idempotency_key: key })
      assertFresh(first, 200)
      const other = await a.request('POST', `/mandates/${m2.id}/revoke`, { idempotency_key: key })
      assertError(other, 422, 'idempotency_error', 'idempotency_key_reused', 'idempotency_key')
      assert.equal((await getMandate(a, m2.id)).status, 'active')

      const p1 = await succeededPayment(a, m2.id, 100)
      const p2 = await succeededPayment(a, m2.id, 100)
      const refundKey = newKey()
      const r1 = await a.request('POST', `/payments/${p1.id}/refunds`, { amount: 10, idempotency_key: refundKey })
      assertFresh(r1, 201)
      const r2 = await a.request('POST', `/payments/${p2.id}/refunds`, { amount: 10, idempotency_key: refundKey })
      assertError(r2, 422, 'idempotency_error', 'idempotency_key_reused', 'idempotency_key')
      assert.equal((await a.request('GET', `/payments/${p2.id}`)).body.data.amount_refunded, 0)
      assertReplay(await a.request('POST', `/payments/${p1.id}/refunds`, { amount: 10, idempotency_key: refundKey }), r1)
    })

    test('after retries of the same bytes replayed, any other request under the key is still checked in full', async () => {
      // A retry with the text of one that matched skips the fingerprint (src/http/retry-matches.ts): this
      // holds that the shortcut never stands in for a request that differs in anything the fingerprint covers.
      const a = await t.account()
      const m1 = await multiUseMandate(t, a)
      const m2 = await multiUseMandate(t, a)
      const key = newKey()
      const text = `{"mandate_id":"${m1.id}","amount":100,"idempotency_key":"${key}"}`
      const first = await a.request('POST', '/payments', text)
      assertFresh(first, 201)
      for (let i = 0; i < 3; i++) assertReplay(await a.request('POST', '/payments', text), first)

      const reused = (res: Response) => assertError(res, 422, 'idempotency_error', 'idempotency_key_reused', 'idempotency_key')
      reused(await a.request('POST', '/payments', text.replace('"amount":100', '"amount":101')))
      reused(await a.request('POST', '/payments', text.replace(m1.id, m2.id)))
      // Another path under the key (the same bytes on another path: the revocations below).
      reused(await a.request('POST', `/payments/${first.body.data.id}/refunds`, `{"idempotency_key":"${key}"}`))
      // Other bytes that ask the same thing (members reordered, a default sent) replay, and so does the first text again.
      assertReplay(await a.request('POST', '/payments', `{"idempotency_key":"${key}","amount":100,"mandate_id":"${m1.id}"}`), first)
      assertReplay(await a.request('POST', '/payments', text.replace('"amount":100', '"amount":100,"currency":"USD"')), first)
      assertReplay(await a.request('POST', '/payments', text), first)
      assert.equal(await paymentCount(t, a.id), 1)
      assert.equal((await getMandate(a, m1.id)).amount_used, 100)
      assert.equal((await getMandate(a, m2.id)).amount_used, 0)

      // The same for a route with a path parameter: one mandate's revocation retried, then the same bytes for another.
      const revokeKey = newKey()
      const revokeText = `{"idempotency_key":"${revokeKey}"}`
      const revoked = await a.request('POST', `/mandates/${m1.id}/revoke`, revokeText)
      assertFresh(revoked, 200)
      assertReplay(await a.request('POST', `/mandates/${m1.id}/revoke`, revokeText), revoked)
      assertReplay(await a.request('POST', `/mandates/${m1.id}/revoke`, revokeText), revoked)
      reused(await a.request('POST', `/mandates/${m2.id}/revoke`, revokeText))
      assert.equal((await getMandate(a, m2.id)).status, 'active')
    })

    // ---------------------------------------------------------------- replay

    test('replay: same status, byte-identical body, Idempotent-Replayed only on the replay; nothing processed again', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a)
      const key = newKey()
      const body = { mandate_id: m.id, amount: 250, metadata: { order: 'A-1' }, idempotency_key: key }
      const first = await a.request('POST', '/payments', body)
      assertFresh(first, 201)
      assert.equal(first.body.data.status, 'succeeded')
      t.clock.advance(5_000)
      const second = await a.request('POST', '/payments', body)
      const third = await a.request('POST', '/payments', body)
      assertReplay(second, first)
      assertReplay(third, first)
      assert.notEqual(requestIdOf(second), requestIdOf(first))

      assert.equal(await paymentCount(t, a.id), 1)
      const rows = await t.store.db.kysely.selectFrom('payments').select(['id', 'amount']).where('mandate_id', '=', m.id).execute()
      assert.deepEqual(rows.map((r) => [r.id, Number(r.amount)]), [[first.body.data.id, 250]])
      const after = await getMandate(a, m.id)
      assert.equal(after.amount_used, 250)
      assert.equal(after.uses_count, 1)
      assert.equal(await countEvents(t, a.id, 'payment.created'), 1)
      assert.equal(await countEvents(t, a.id, 'payment.succeeded'), 1)
      const get = await a.request('GET', `/payments/${first.body.data.id}`)
      assert.deepEqual(get.body.data, first.body.data)
    })

    test('replay of a single_use payment: the consumed mandate does not turn the retry into a 422', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a, { usage: 'single_use', budget_amount: 1000 })
      const key = newKey()
      const first = await a.request('POST', '/payments', { mandate_id: m.id, amount: 700, idempotency_key: key })
      assertFresh(first, 201)
      assert.equal((await getMandate(a, m.id)).status, 'consumed')
      assertReplay(await a.request('POST', '/payments', { mandate_id: m.id, amount: 700, idempotency_key: key }), first)
      assert.equal(await paymentCount(t, a.id), 1)
      assert.equal(await countEvents(t, a.id, 'mandate.consumed'), 1)
    })

    // ---------------------------------------------------------------- concurrency

    test('30 concurrent requests with one key: one payment; 201 (same body) or 409 idempotency_key_in_use with Retry-After', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a, { max_amount: 1000, budget_amount: 100_000 })
      const key = newKey('race')
      const body = { mandate_id: m.id, amount: 100, idempotency_key: key }
      const answers = await Promise.all(Array.from({ length: 30 }, () => a.request('POST', '/payments', body)))

      const created = answers.filter((r) => r.status === 201)
      const busy = answers.filter((r) => r.status === 409)
      assert.equal(created.length + busy.length, 30, answers.filter((r) => r.status !== 201 && r.status !== 409).map((r) => `${r.status} ${r.raw}`).join('\n'))
      assert.ok(created.length >= 1, 'at least one 201')
      for (const r of created) assert.equal(r.raw, created[0]!.raw)
      const fresh = created.filter((r) => r.headers['idempotent-replayed'] === undefined)
      assert.equal(fresh.length, 1, 'exactly one answer is not a replay')
      for (const r of created) if (r !== fresh[0]) assert.equal(r.headers['idempotent-replayed'], 'true')
      for (const r of busy) {
        assertError(r, 409, 'conflict_error', 'idempotency_key_in_use', 'idempotency_key')
        const retryAfter = r.headers['retry-after']
        assert.equal(typeof retryAfter, 'string', 'Retry-After present')
        assert.match(retryAfter as string, /^[1-9]\d*$/)
        assert.equal(r.headers['idempotent-replayed'], undefined)
      }

      assert.equal(await paymentCount(t, a.id), 1)
      assert.equal((await getMandate(a, m.id)).amount_used, 100)
      assert.equal(await countEvents(t, a.id, 'payment.created'), 1)
      assert.deepEqual(await keyRows(t, a.id), [key])
      // After the race the key replays the one payment.
      assertReplay(await a.request('POST', '/payments', body), fresh[0]!)
    })
  })
}
