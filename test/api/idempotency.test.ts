import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Response, startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { API_VERSION, assertError, requestIdOf } from '../helpers/assertions.js'
import { countEvents, createMandate, createSucceededPayment, DAY_MS, getMandate, inFuture } from '../helpers/fixtures.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Idempotency through HTTP, on every store: contract section 5 (with the error envelope of section 2
 * and the payment operations of section 6).
 */

function assertInvalidKey(res: Response): void {
  assertError(res, 400, 'invalid_request_error', 'parameter_invalid', 'idempotency_key')
}

function assertFresh(res: Response, status: number): void {
  assert.equal(res.status, status, res.raw)
  assert.equal(res.headers['idempotent-replayed'], undefined, 'no Idempotent-Replayed on a first answer')
}

/** A replay of `first`: its status and its body byte for byte, with Idempotent-Replayed: true. */
function assertReplay(res: Response, first: Response): void {
  assert.equal(res.status, first.status, res.raw)
  assert.equal(res.raw, first.raw)
  assert.equal(res.headers['idempotent-replayed'], 'true')
  assert.equal(res.headers['api-version'], API_VERSION)
}

/** The idempotency keys the store holds for the account, in order. */
async function keyRows(t: TestApp, accountId: string): Promise<string[]> {
  const rows = await t.store.db.kysely.selectFrom('idempotency_keys').select('idempotency_key')
    .where('account_id', '=', accountId).orderBy('idempotency_key').execute()
  return rows.map((r) => r.idempotency_key)
}

let keySeq = 0
/** A key no other test uses. */
const newKey = (label = 'k') => `${label}-${process.pid}-${Date.now()}-${++keySeq}`

for (const kind of storeKinds()) {
  describe(`idempotency (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    const mandate = (a: TestAccount, body: Record<string, unknown> = {}) => createMandate(t, a, {
      max_amount: 1000, budget_amount: 5000, usage: 'multi_use', expires_at: inFuture(t, 30 * DAY_MS), ...body,
    })
    const succeededPayment = (a: TestAccount, mandateId: string, amount = 100) => createSucceededPayment(a, mandateId, amount, newKey('setup'))

    async function paymentCount(accountId: string): Promise<number> {
      const rows = await t.store.db.kysely.selectFrom('payments').select('id').where('account_id', '=', accountId).execute()
      return rows.length
    }

    // ---------------------------------------------------------------- where the key comes from

    test('the key from the body or the Idempotency-Key header; either one replays the other', async () => {
      const a = await t.account()
      const m = await mandate(a)
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
      assert.equal(await paymentCount(a.id), 2)
    })

    test('header and body both present and equal: accepted as one key', async () => {
      const a = await t.account()
      const m = await mandate(a)
      const key = newKey()
      const res = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: key }, { headers: { 'idempotency-key': key } })
      assertFresh(res, 201)
      const again = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: key }, { headers: { 'idempotency-key': key } })
      assertReplay(again, res)
      assert.deepEqual(await keyRows(t, a.id), [key])
      assert.equal(await paymentCount(a.id), 1)
    })

    test('header and body both present and different -> 400 idempotency_key_mismatch, nothing done', async () => {
      const a = await t.account()
      const m = await mandate(a)
      const res = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: newKey('body') }, { headers: { 'idempotency-key': newKey('header') } })
      assertError(res, 400, 'invalid_request_error', 'idempotency_key_mismatch', 'idempotency_key')
      assert.equal(res.headers['idempotent-replayed'], undefined)
      assert.equal(await paymentCount(a.id), 0)
      assert.deepEqual(await keyRows(t, a.id), [])

      const wish = await a.request('POST', '/wishes', { query: 'a kettle', idempotency_key: 'one' }, { headers: { 'idempotency-key': 'two' } })
      assertError(wish, 400, 'invalid_request_error', 'idempotency_key_mismatch', 'idempotency_key')
    })

    test('no key on POST /payments -> 400 parameter_missing idempotency_key', async () => {
      const a = await t.account()
      const m = await mandate(a)
      const res = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100 })
      const error = assertError(res, 400, 'invalid_request_error', 'parameter_missing', 'idempotency_key')
      assert.ok(Array.isArray(error.errors), 'errors[] present')
      assert.deepEqual(error.errors.map((e: any) => [e.param, e.code]), [['idempotency_key', 'parameter_missing']])
      assert.equal(await paymentCount(a.id), 0)
      assert.equal((await getMandate(a, m.id)).amount_used, 0)
    })

    test('no key on POST /payments/:id/refunds -> 400 parameter_missing idempotency_key', async () => {
      const a = await t.account()
      const m = await mandate(a)
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
      const m = await mandate(a)
      for (const bad of ['x'.repeat(256), '', 'café', 'tab\there', 'bell\u0007', 'nul\u0000', 'del\u007f', 'line\nbreak']) {
        const res = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: bad })
        assertInvalidKey(res)
      }
      assert.equal(await paymentCount(a.id), 0)
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
      const m = await mandate(a)
      for (const bad of ['x'.repeat(256), '', 'café', 'tab\there', 'bell\u0007']) {
        const res = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100 }, { headers: { 'idempotency-key': bad } })
        assertInvalidKey(res)
      }
      // Also on a route where the key is optional.
      assertInvalidKey(await a.request('POST', '/wishes', { query: 'a kettle' }, { headers: { 'idempotency-key': 'x'.repeat(256) } }))
      assertInvalidKey(await a.request('POST', '/wishes', { query: 'a kettle', idempotency_key: '' }))
      assert.equal(await paymentCount(a.id), 0)
      assert.deepEqual(await keyRows(t, a.id), [])

      const ok = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100 }, { headers: { 'idempotency-key': 'z'.repeat(255) } })
      assertFresh(ok, 201)
      assert.deepEqual(await keyRows(t, a.id), ['z'.repeat(255)])
    })

    // ---------------------------------------------------------------- scope and fingerprint

    test('scope is (account, key): one key used by two accounts makes two independent payments', async () => {
      const a = await t.account()
      const b = await t.account()
      const ma = await mandate(a)
      const mb = await mandate(b)
      const key = newKey('shared')
      const ra = await a.request('POST', '/payments', { mandate_id: ma.id, amount: 100, idempotency_key: key })
      const rb = await b.request('POST', '/payments', { mandate_id: mb.id, amount: 300, idempotency_key: key })
      assertFresh(ra, 201)
      assertFresh(rb, 201)
      assert.notEqual(ra.body.data.id, rb.body.data.id)
      assert.equal(ra.body.data.mandate_id, ma.id)
      assert.equal(rb.body.data.mandate_id, mb.id)
      assert.equal(rb.body.data.amount, 300)
      assert.equal(await paymentCount(a.id), 1)
      assert.equal(await paymentCount(b.id), 1)
      assert.equal((await getMandate(a, ma.id)).amount_used, 100)
      assert.equal((await getMandate(b, mb.id)).amount_used, 300)
      // Each account replays its own.
      assertReplay(await a.request('POST', '/payments', { mandate_id: ma.id, amount: 100, idempotency_key: key }), ra)
      assertReplay(await b.request('POST', '/payments', { mandate_id: mb.id, amount: 300, idempotency_key: key }), rb)
    })

    test('the fingerprint is taken after defaults: currency USD and payment_method card sent or not, in any order, replay', async () => {
      const a = await t.account()
      const m = await mandate(a)
      const key = newKey()
      const first = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: key })
      assertFresh(first, 201)
      assert.equal(first.body.data.currency, 'USD')
      assert.equal(first.body.data.payment_method, 'card')
      assertReplay(await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, currency: 'USD', idempotency_key: key }), first)
      assertReplay(await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, payment_method: 'card', idempotency_key: key }), first)
      assertReplay(await a.request('POST', '/payments', { idempotency_key: key, payment_method: 'card', currency: 'USD', amount: 100, mandate_id: m.id }), first)
      assertReplay(await a.request('POST', '/payments', '{"amount":100,"mandate_id":"' + m.id + '","idempotency_key":"' + key + '"}'), first)
      assert.equal(await paymentCount(a.id), 1)
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
      const m = await mandate(a)
      const payKey = newKey()
      const paid = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, currency: 'usd', idempotency_key: payKey })
      assertFresh(paid, 201)
      assert.equal(paid.body.data.currency, 'USD')
      assertReplay(await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, currency: 'USD', idempotency_key: payKey }), paid)
      assertReplay(await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: payKey }), paid)
    })

    test('the same key with another request -> 422 idempotency_key_reused (other amount, other path, other member)', async () => {
      const a = await t.account()
      const m = await mandate(a)
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

      assert.equal(await paymentCount(a.id), 1)
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
      const m1 = await mandate(a)
      const m2 = await mandate(a)
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

    // ---------------------------------------------------------------- replay

    test('replay: same status, byte-identical body, Idempotent-Replayed only on the replay; nothing processed again', async () => {
      const a = await t.account()
      const m = await mandate(a)
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

      assert.equal(await paymentCount(a.id), 1)
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
      const m = await mandate(a, { usage: 'single_use', budget_amount: 1000 })
      const key = newKey()
      const first = await a.request('POST', '/payments', { mandate_id: m.id, amount: 700, idempotency_key: key })
      assertFresh(first, 201)
      assert.equal((await getMandate(a, m.id)).status, 'consumed')
      assertReplay(await a.request('POST', '/payments', { mandate_id: m.id, amount: 700, idempotency_key: key }), first)
      assert.equal(await paymentCount(a.id), 1)
      assert.equal(await countEvents(t, a.id, 'mandate.consumed'), 1)
    })

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
      assert.equal(await paymentCount(a.id), 0)
      assert.equal(await countEvents(t, a.id, 'payment.created'), 0)
    })

    test('a 422 mandate_budget_exceeded is saved: replayed even once the mandate would allow it, and it left no trace', async () => {
      const a = await t.account()
      const m = await mandate(a, { max_amount: 1000, budget_amount: 1000 })
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
      assert.equal(await paymentCount(a.id), 1)
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
      assert.equal(await paymentCount(a.id), 1)
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
      const m = await mandate(a)
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
      const m = await mandate(a)
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
      assert.equal(await paymentCount(a.id), 1)
    })

    test('a 400 from the service (unknown payment_method) is not saved either', async () => {
      const a = await t.account()
      const m = await mandate(a)
      const key = newKey()
      const bad = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, payment_method: 'carrier_pigeon', idempotency_key: key })
      assertError(bad, 400, 'invalid_request_error', 'parameter_invalid', 'payment_method')
      assert.deepEqual(await keyRows(t, a.id), [])
      const ok = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: key })
      assertFresh(ok, 201)
    })

    test('401 and 403 are not saved: the retry with a write key succeeds', async () => {
      const a = await t.account()
      const m = await mandate(a)
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
      assert.equal(await paymentCount(a.id), 0)

      const ok = await a.request('POST', '/payments', body)
      assertFresh(ok, 201)
      assert.equal(await paymentCount(a.id), 1)
      assertReplay(await a.request('POST', '/payments', body), ok)
    })

    test('a 409 invalid_state_transition is not saved: the same key stays retryable, never replayed', async () => {
      const a = await t.account()
      const m = await mandate(a)
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

    // ---------------------------------------------------------------- concurrency

    test('30 concurrent requests with one key: one payment; 201 (same body) or 409 idempotency_key_in_use with Retry-After', async () => {
      const a = await t.account()
      const m = await mandate(a, { max_amount: 1000, budget_amount: 100_000 })
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

      assert.equal(await paymentCount(a.id), 1)
      assert.equal((await getMandate(a, m.id)).amount_used, 100)
      assert.equal(await countEvents(t, a.id, 'payment.created'), 1)
      assert.deepEqual(await keyRows(t, a.id), [key])
      // After the race the key replays the one payment.
      assertReplay(await a.request('POST', '/payments', body), fresh[0]!)
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
      const m = await mandate(a)
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
