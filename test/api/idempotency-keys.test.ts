import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { assertError } from '../helpers/assertions.js'
import { countEvents, DAY_MS, getMandate, inFuture } from '../helpers/fixtures.js'
import { assertInvalidKey, assertFresh, assertReplay, keyRows, newKey, multiUseMandate, paymentCount, succeededPayment } from '../helpers/idempotency.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Idempotency through HTTP, on every store: contract section 5 (with the error envelope of section 2
 * and the payment operations of section 6). This file: where the key comes from, its format, and the other routes that take one.
 */

for (const kind of storeKinds()) {
  describe(`idempotency: where the key comes from, its format, the routes that take one (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    // ---------------------------------------------------------------- where the key comes from

    test('the key from the body or the Idempotency-Key header; either one replays the other', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a)
      const key = newKey()
      const first = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: key })
      assertFresh(first, 201)
      assert.equal(first.body.data.amount, 100)
      // The same key as a header, the body without it: the same request, since the key is not fingerprinted.
      const viaHeader = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100 }, { headers: { 'idempotency-key': key } })
      assertReplay(viaHeader, first)

      const headerKey = newKey()
      const h1 = await a.request('POST', '/payments', { mandate_id: m.id, amount: 200 }, { headers: { 'Idempotency-Key': headerKey } })
      assertFresh(h1, 201)
      assert.equal(h1.body.data.amount, 200)
      assert.notEqual(h1.body.data.id, first.body.data.id)
      const h2 = await a.request('POST', '/payments', { mandate_id: m.id, amount: 200, idempotency_key: headerKey })
      assertReplay(h2, h1)
      assert.equal(await paymentCount(t, a.id), 2)
    })

    test('header and body both present and equal: accepted as one key', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a)
      const key = newKey()
      const res = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: key }, { headers: { 'idempotency-key': key } })
      assertFresh(res, 201)
      const again = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: key }, { headers: { 'idempotency-key': key } })
      assertReplay(again, res)
      assert.deepEqual(await keyRows(t, a.id), [key])
      assert.equal(await paymentCount(t, a.id), 1)
    })

    test('header and body both present and different -> 400 idempotency_key_mismatch, nothing done', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a)
      const res = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: newKey('body') }, { headers: { 'idempotency-key': newKey('header') } })
      assertError(res, 400, 'invalid_request_error', 'idempotency_key_mismatch', 'idempotency_key')
      assert.equal(res.headers['idempotent-replayed'], undefined)
      assert.equal(await paymentCount(t, a.id), 0)
      assert.deepEqual(await keyRows(t, a.id), [])

      const wish = await a.request('POST', '/wishes', { query: 'a kettle', idempotency_key: 'one' }, { headers: { 'idempotency-key': 'two' } })
      assertError(wish, 400, 'invalid_request_error', 'idempotency_key_mismatch', 'idempotency_key')
    })

    test('no key on POST /payments -> 400 parameter_missing idempotency_key', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a)
      const res = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100 })
      const error = assertError(res, 400, 'invalid_request_error', 'parameter_missing', 'idempotency_key')
      assert.ok(Array.isArray(error.errors), 'errors[] present')
      assert.deepEqual(error.errors.map((e: any) => [e.param, e.code]), [['idempotency_key', 'parameter_missing']])
      assert.equal(await paymentCount(t, a.id), 0)
      assert.equal((await getMandate(a, m.id)).amount_used, 0)
    })

    test('no key on POST /payments/:id/refunds -> 400 parameter_missing idempotency_key', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a)
      const p = await succeededPayment(a, m.id)
      const res = await a.request('POST', `/payments/${p.id}/refunds`, { amount: 50 })
      assertError(res, 400, 'invalid_request_error', 'parameter_missing', 'idempotency_key')
      const refunds = await a.request('GET', `/payments/${p.id}/refunds`)
      assert.equal(refunds.status, 200, refunds.raw)
      assert.equal(refunds.body.meta.total, 0)
      // With a key the refund is made, and replays.
      const key = newKey()
      const ok = await a.request('POST', `/payments/${p.id}/refunds`, { amount: 50, idempotency_key: key })
      assertFresh(ok, 201)
      assert.equal(ok.body.data.amount, 50)
      assertReplay(await a.request('POST', `/payments/${p.id}/refunds`, { amount: 50 }, { headers: { 'idempotency-key': key } }), ok)
      const after = await a.request('GET', `/payments/${p.id}`)
      assert.equal(after.body.data.amount_refunded, 50)
    })

    test('the key is optional on POST /wishes, POST /mandates, POST /mandates/:id/revoke; with one they replay', async () => {
      const a = await t.account()
      // Without a key: processed every time, nothing recorded.
      const w1 = await a.request('POST', '/wishes', { query: 'a kettle' })
      const w2 = await a.request('POST', '/wishes', { query: 'a kettle' })
      assertFresh(w1, 201)
      assertFresh(w2, 201)
      assert.notEqual(w1.body.data.id, w2.body.data.id)
      const m1 = await a.request('POST', '/mandates', { protocol: 'ap2', max_amount: 1000, expires_at: inFuture(t, DAY_MS) })
      assertFresh(m1, 201)
      const r1 = await a.request('POST', `/mandates/${m1.body.data.id}/revoke`)
      assertFresh(r1, 200)
      assert.equal(r1.body.data.status, 'revoked')
      assert.deepEqual(await keyRows(t, a.id), [])

      // With a key: the mandate is made once.
      const mk = newKey()
      const expires = inFuture(t, DAY_MS)
      const m2 = await a.request('POST', '/mandates', { protocol: 'ap2', max_amount: 1000, expires_at: expires, idempotency_key: mk })
      assertFresh(m2, 201)
      assertReplay(await a.request('POST', '/mandates', { protocol: 'ap2', max_amount: 1000, expires_at: expires, idempotency_key: mk }), m2)
      const listed = await a.request('GET', '/mandates')
      assert.equal(listed.body.meta.total, 2)

      // Revoke with a key: the retry replays the 200 rather than answering 409 for an already revoked mandate.
      const rk = newKey()
      const r2 = await a.request('POST', `/mandates/${m2.body.data.id}/revoke`, { idempotency_key: rk })
      assertFresh(r2, 200)
      assert.equal(r2.body.data.status, 'revoked')
      assertReplay(await a.request('POST', `/mandates/${m2.body.data.id}/revoke`, undefined, { headers: { 'idempotency-key': rk } }), r2)
      assert.equal(await countEvents(t, a.id, 'mandate.revoked'), 2)
    })

    // ---------------------------------------------------------------- key format

    test('key format: 1..255 printable ASCII in the body; 256 chars, empty, non-ASCII, control characters -> 400', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a)
      for (const bad of ['x'.repeat(256), '', 'café', 'tab\there', 'bell\u0007', 'nul\u0000', 'del\u007f', 'line\nbreak']) {
        const res = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: bad })
        assertInvalidKey(res)
      }
      assert.equal(await paymentCount(t, a.id), 0)
      assert.deepEqual(await keyRows(t, a.id), [])

      const longest = `${'y'.repeat(254)}~`
      const ok = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: longest })
      assertFresh(ok, 201)
      const spaces = ' !"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~ '
      const ok2 = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: spaces })
      assertFresh(ok2, 201)
      assert.deepEqual((await keyRows(t, a.id)).sort(), [longest, spaces].sort())
    })

    test('key format: the Idempotency-Key header follows the same rule', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a)
      for (const bad of ['x'.repeat(256), '', 'café', 'tab\there', 'bell\u0007']) {
        const res = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100 }, { headers: { 'idempotency-key': bad } })
        assertInvalidKey(res)
      }
      // Also on a route where the key is optional.
      assertInvalidKey(await a.request('POST', '/wishes', { query: 'a kettle' }, { headers: { 'idempotency-key': 'x'.repeat(256) } }))
      assertInvalidKey(await a.request('POST', '/wishes', { query: 'a kettle', idempotency_key: '' }))
      assert.equal(await paymentCount(t, a.id), 0)
      assert.deepEqual(await keyRows(t, a.id), [])

      const ok = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100 }, { headers: { 'idempotency-key': 'z'.repeat(255) } })
      assertFresh(ok, 201)
      assert.deepEqual(await keyRows(t, a.id), ['z'.repeat(255)])
    })

    // ---------------------------------------------------------------- other routes

    test('POST /wishes with a key: the replay returns the same wish; one wish row, one wish.created event', async () => {
      const a = await t.account()
      const key = newKey()
      const body = { query: 'a kettle', budget: { max: 40, currency: 'EUR' }, metadata: { ref: 'w-1' } }
      const first = await a.request('POST', '/wishes', body, { headers: { 'idempotency-key': key } })
      assertFresh(first, 201)
      t.clock.advance(1_000)
      const again = await a.request('POST', '/wishes', { ...body, idempotency_key: key })
      assertReplay(again, first)
      assert.equal(again.body.data.id, first.body.data.id)
      const rows = await t.store.db.kysely.selectFrom('wishes').select('id').where('account_id', '=', a.id).execute()
      assert.deepEqual(rows.map((r) => r.id), [first.body.data.id])
      assert.equal(await countEvents(t, a.id, 'wish.created'), 1)
      // Another wish body with the same key is a reuse.
      assertError(await a.request('POST', '/wishes', { query: 'a teapot', idempotency_key: key }), 422, 'idempotency_error', 'idempotency_key_reused', 'idempotency_key')
    })

    test('the saved record is the answer: status, body and fingerprint stored for (account, key)', async () => {
      const a = await t.account()
      const m = await multiUseMandate(t, a)
      const key = newKey()
      const res = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: key })
      assertFresh(res, 201)
      const row = await t.store.db.kysely.selectFrom('idempotency_keys').selectAll()
        .where('account_id', '=', a.id).where('idempotency_key', '=', key).executeTakeFirstOrThrow()
      assert.equal(Number(row.response_status), 201)
      assert.equal(row.response_body, res.raw)
      const ttlMs = new Date(row.expires_at).getTime() - new Date(row.created_at).getTime()
      assert.equal(ttlMs, 86_400_000, 'default retention 24 h')
    })
  })
}
