import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertError } from '../helpers/assertions.js'
import { createMandate, DAY_MS, inFuture } from '../helpers/fixtures.js'
import { assertFresh, assertReplay, keyRows, newKey } from '../helpers/idempotency.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Idempotency through HTTP, on every store: contract section 5 (with the error envelope of section 2
 * and the payment operations of section 6). This file: IDEMPOTENCY_TTL_SECONDS and the purge job.
 */

for (const kind of storeKinds()) {
  describe(`idempotency retention (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind, { IDEMPOTENCY_TTL_SECONDS: '60' }) })
    after(async () => { await t.close() })

    const mandate = (a: TestAccount) => createMandate(t, a, {
      max_amount: 1000, budget_amount: 10_000, usage: 'multi_use', expires_at: inFuture(t, 30 * DAY_MS),
    })

    async function paymentIds(accountId: string): Promise<string[]> {
      const rows = await t.store.db.kysely.selectFrom('payments').select('id').where('account_id', '=', accountId).orderBy('id').execute()
      return rows.map((r) => r.id)
    }

    test('within IDEMPOTENCY_TTL_SECONDS the key replays; after it the key is new again', async () => {
      const a = await t.account()
      const m = await mandate(a)
      const key = newKey()
      const body = { mandate_id: m.id, amount: 100, idempotency_key: key }
      const first = await a.request('POST', '/payments', body)
      assertFresh(first, 201)
      t.clock.advance(59_000)
      assertReplay(await a.request('POST', '/payments', body), first)
      assert.equal((await paymentIds(a.id)).length, 1)

      t.clock.advance(2_000)
      const second = await a.request('POST', '/payments', body)
      assertFresh(second, 201)
      assert.notEqual(second.body.data.id, first.body.data.id)
      assert.deepEqual(await paymentIds(a.id), [first.body.data.id, second.body.data.id].sort())
      const mres = await a.request('GET', `/mandates/${m.id}`)
      assert.equal(mres.body.data.amount_used, 200)
      // The new answer is the one now kept.
      assertReplay(await a.request('POST', '/payments', body), second)
      assert.deepEqual(await keyRows(t, a.id), [key])

      // An expired key may also be used for a different request: no 422 idempotency_key_reused.
      t.clock.advance(61_000)
      const other = await a.request('POST', '/payments', { ...body, amount: 300 })
      assertFresh(other, 201)
      assert.equal(other.body.data.amount, 300)
      // The earlier request's bytes, replayed twice under the key's earlier records, are now another
      // request than the key's record: the shortcut for retried bytes (src/http/retry-matches.ts) is bound
      // to the record it matched.
      assertError(await a.request('POST', '/payments', body), 422, 'idempotency_error', 'idempotency_key_reused')
      assertReplay(await a.request('POST', '/payments', { ...body, amount: 300 }), other)
    })

    test('the purge job deletes expired idempotency records and keeps live ones', async () => {
      const a = await t.account()
      const m = await mandate(a)
      const oldKey = newKey('old')
      const oldWish = newKey('oldwish')
      assertFresh(await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: oldKey }), 201)
      assertFresh(await a.request('POST', '/wishes', { query: 'a kettle', idempotency_key: oldWish }), 201)
      t.clock.advance(61_000)
      const liveKey = newKey('live')
      const live = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: liveKey })
      assertFresh(live, 201)
      assert.deepEqual(await keyRows(t, a.id), [liveKey, oldKey, oldWish].sort())

      await t.jobs.runOnce()
      assert.deepEqual(await keyRows(t, a.id), [liveKey])
      // What was kept still replays; what went is new again.
      assertReplay(await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: liveKey }), live)
      const again = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: oldKey })
      assertFresh(again, 201)
      assert.equal((await paymentIds(a.id)).length, 3)
    })
  })
}
