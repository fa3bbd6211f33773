import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { type Response, startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertError, assertInvalid, assertNotFound } from '../helpers/assertions.js'
import { createMandate, createSucceededPayment, createWish, getData, getList, HOUR, inFuture } from '../helpers/fixtures.js'
import { freePort } from '../helpers/receiver.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * OWASP API Security Top 10 probes with two accounts, on both stores:
 * - API1 (broken object level authorization): account B reads, lists, updates, revokes, refunds,
 *   deletes and pays against none of account A's wishes, mandates, payments, refunds, events,
 *   webhook endpoints or deliveries. An object addressed in the path answers 404 `resource_missing`;
 *   one named in a body answers exactly as an id that never existed (contract section 6 codes).
 *   Nothing of A's comes back, and A's objects are unchanged afterwards.
 * - API3 (mass assignment): server-owned members sent on create or update are 400 `parameter_unknown`.
 * - API5 (function level authorization): a read key (rk_) cannot write (403 `insufficient_scope`).
 */

const ENVELOPE_KEYS = ['code', 'errors', 'message', 'param', 'request_id', 'type']

for (const kind of storeKinds()) {
  describe(`hostile access (${kind.name})`, () => {
    let t: TestApp
    let a: TestAccount
    let b: TestAccount
    /** A's objects. */
    const A = { wish: '', mandate: '', payment: '', refund: '', endpoint: '', delivery: '', events: [] as string[] }
    /** A's objects as A reads them, before B tries anything. */
    let snapshot: Record<string, unknown>
    const aPaymentKey = randomUUID()

    /** Everything A can read about its objects. */
    async function readAll(as: TestAccount): Promise<Record<string, unknown>> {
      return {
        wish: await getData(as, `/wishes/${A.wish}`),
        mandate: await getData(as, `/mandates/${A.mandate}`),
        payment: await getData(as, `/payments/${A.payment}`),
        refunds: await getList(as, `/payments/${A.payment}/refunds`),
        endpoint: await getData(as, `/webhook_endpoints/${A.endpoint}`),
        deliveries: await getList(as, `/webhook_endpoints/${A.endpoint}/deliveries`),
        events: await getList(as, '/events?limit=100'),
      }
    }

    before(async () => {
      t = await startTestApp(kind, { WEBHOOK_ALLOW_PRIVATE: 'true' })
      a = await t.account()
      b = await t.account()
      // An endpoint first, so that what follows is delivered (to a closed port: a failed attempt).
      const ep = await a.request('POST', '/webhook_endpoints', { url: `http://127.0.0.1:${await freePort()}/hooks`, events: ['*'] })
      assert.equal(ep.status, 201, ep.raw)
      A.endpoint = ep.body.data.id
      A.wish = (await createWish(a, { query: 'a teapot', protocol: 'ap2' })).id
      A.mandate = (await createMandate(t, a, { wish_id: A.wish, usage: 'multi_use', max_amount: 5000, budget_amount: 20_000 })).id
      A.payment = (await createSucceededPayment(a, A.mandate, 1000, aPaymentKey)).id
      const refund = await a.request('POST', `/payments/${A.payment}/refunds`, { amount: 100, idempotency_key: randomUUID() })
      assert.equal(refund.status, 201, refund.raw)
      A.refund = refund.body.data.id
      while (await t.jobs.runOnce()) { /* deliver everything due */ }
      const deliveries = await getList(a, `/webhook_endpoints/${A.endpoint}/deliveries`)
      assert.ok(deliveries.data.length > 0, 'A has delivery attempts')
      A.delivery = deliveries.data[0].id
      A.events = (await getList(a, '/events?limit=100')).data.map((e: { id: string }) => e.id)
      assert.ok(A.events.length >= 5)
      snapshot = await readAll(a)
    })
    after(async () => { await t.close() })

    /** An error in the envelope only: nothing of anyone's objects. */
    function assertNoData(res: Response): void {
      assert.equal(res.body.data, undefined, res.raw)
      assert.deepEqual(Object.keys(res.body), ['error'])
      for (const key of Object.keys(res.body.error)) assert.ok(ENVELOPE_KEYS.includes(key), key)
    }

    /** No id of A's anywhere in the answer. */
    function assertNothingOfA(res: Response): void {
      for (const id of [A.wish, A.mandate, A.payment, A.refund, A.endpoint, A.delivery, ...A.events]) {
        assert.ok(!res.raw.includes(id), `${id} leaked: ${res.raw}`)
      }
    }

    test("B cannot read, change, revoke, refund or delete A's objects by id: 404 resource_missing", async () => {
      const attempts: Array<[string, string, unknown?]> = [
        ['GET', `/wishes/${A.wish}`],
        ['PUT', `/wishes/${A.wish}`, { status: 'cancelled' }],
        ['PUT', `/wishes/${A.wish}`, { metadata: { owner: 'b' }, query: 'mine now' }],
        ['DELETE', `/wishes/${A.wish}`],
        ['GET', `/mandates/${A.mandate}`],
        ['POST', `/mandates/${A.mandate}/revoke`, {}],
        ['GET', `/payments/${A.payment}`],
        ['GET', `/payments/${A.payment}/refunds`],
        ['POST', `/payments/${A.payment}/refunds`, { amount: 1, idempotency_key: randomUUID() }],
        ['POST', `/payments/${A.payment}/refunds`, { idempotency_key: randomUUID() }],
        ['GET', `/payments/${A.refund}`],
        ['GET', `/webhook_endpoints/${A.endpoint}`],
        ['PUT', `/webhook_endpoints/${A.endpoint}`, { enabled: false }],
        ['PUT', `/webhook_endpoints/${A.endpoint}`, { url: 'http://127.0.0.1:9/steal', events: ['*'] }],
        ['DELETE', `/webhook_endpoints/${A.endpoint}`],
        ['GET', `/webhook_endpoints/${A.endpoint}/deliveries`],
        ['GET', `/webhook_endpoints/${A.delivery}`],
        ...A.events.map((id): [string, string] => ['GET', `/events/${id}`]),
      ]
      for (const [method, url, body] of attempts) {
        for (const key of [b.key, b.readKey]) {
          const res = await b.request(method as never, url, body, { key })
          if (key === b.readKey && method !== 'GET') {
            assertError(res, 403, 'permission_error', 'insufficient_scope')
          } else {
            assertNotFound(res)
          }
          assertNoData(res)
        }
      }
      assert.deepEqual(await readAll(a), snapshot, "A's objects are unchanged")
    })

    test("B cannot pay against A's mandate or link A's wish: answered as for ids that never existed", async () => {
      const mandateBody = (wishId: string) => ({ protocol: 'ap2', max_amount: 100, expires_at: inFuture(t, HOUR), wish_id: wishId })
      const pairs: Array<[string, (id: string) => unknown, string, string]> = [
        ['/payments', (id) => ({ mandate_id: id, amount: 100, idempotency_key: randomUUID() }), A.mandate, 'mdt_00000000000000000000000000'],
        ['/payments', (id) => ({ mandate_id: id, amount: 100, payment_method: 'bank_transfer', idempotency_key: randomUUID() }), A.mandate, 'mdt_00000000000000000000000000'],
        ['/mandates', mandateBody, A.wish, 'wish_00000000000000000000000000'],
      ]
      for (const [url, body, theirs, never] of pairs) {
        const foreign = await b.request('POST', url, body(theirs))
        const missing = await b.request('POST', url, body(never))
        assert.ok(foreign.status >= 400 && foreign.status < 500, foreign.raw)
        assert.deepEqual(
          [foreign.status, foreign.body.error.type, foreign.body.error.code, foreign.body.error.param],
          [missing.status, missing.body.error.type, missing.body.error.code, missing.body.error.param],
        )
        assert.equal(foreign.body.error.message, missing.body.error.message.replace(never, theirs))
        assertNoData(foreign)
      }
      // Filters naming A's objects find nothing in B's account.
      for (const url of [`/mandates?wish_id=${A.wish}`, `/payments?mandate_id=${A.mandate}`, `/payments?wish_id=${A.wish}`]) {
        const list = await getList(b, url)
        assert.deepEqual([list.data, list.meta.total], [[], 0], url)
      }
      assert.deepEqual(await readAll(a), snapshot, "A's objects are unchanged")
      assert.equal((await getList(b, '/payments')).meta.total, 0)
    })

    test("B's lists never show A's objects, and B's idempotency keys never replay A's answers", async () => {
      const own = await createWish(b, { query: 'a cup' })
      for (const url of ['/wishes', '/mandates', '/payments', '/events', '/webhook_endpoints', '/wishes?status=active', '/events?type=wish.created']) {
        for (const key of [b.key, b.readKey]) {
          const res = await b.request('GET', `${url}${url.includes('?') ? '&' : '?'}limit=100`, undefined, { key })
          assert.equal(res.status, 200, res.raw)
          assertNothingOfA(res)
        }
      }
      assert.deepEqual((await getList(b, '/wishes')).data.map((w: { id: string }) => w.id), [own.id])

      // The same key A used for its payment makes a new payment in B's account, not a replay of A's.
      const mandate = await createMandate(t, b, { max_amount: 300 })
      const res = await b.request('POST', '/payments', { mandate_id: mandate.id, amount: 300, idempotency_key: aPaymentKey })
      assert.equal(res.status, 201, res.raw)
      assert.equal(res.headers['idempotent-replayed'], undefined)
      assert.notEqual(res.body.data.id, A.payment)
      assertNothingOfA(res)
    })

    test('server-owned members are refused on create and update (mass assignment): 400 parameter_unknown', async () => {
      const c = await t.account()
      const mandate = await createMandate(t, c, { usage: 'multi_use', budget_amount: 10_000 })
      const payment = await createSucceededPayment(c, mandate.id, 500)
      const wish = await createWish(c, { query: 'a saucer' })
      const ep = await c.request('POST', '/webhook_endpoints', { url: 'http://127.0.0.1:9/hooks', events: ['*'] })
      const totals = async () => Promise.all(['/wishes', '/mandates', '/payments', '/webhook_endpoints', '/events', `/payments/${payment.id}/refunds`]
        .map(async (url) => (await getList(c, url)).meta.total))
      const before = await totals()

      const forged = { id: 'x_forged', account_id: b.id, created_at: '2020-01-01T00:00:00.000Z', updated_at: '2020-01-01T00:00:00.000Z' }
      const cases: Array<[string, string, Record<string, unknown>, Record<string, unknown>]> = [
        ['POST', '/wishes', { query: 'x' }, { ...forged, status: 'fulfilled' }],
        ['POST', '/mandates', { protocol: 'ap2', max_amount: 100, expires_at: inFuture(t, HOUR) },
          { ...forged, status: 'active', amount_used: 0, uses_count: 0, revoked_at: null }],
        ['POST', '/payments', { mandate_id: mandate.id, amount: 100, idempotency_key: randomUUID() },
          { ...forged, status: 'succeeded', amount_refunded: 0, protocol_type: 'ap2', failure_code: null, wish_id: wish.id }],
        ['POST', `/payments/${payment.id}/refunds`, { amount: 1, idempotency_key: randomUUID() }, { ...forged, status: 'succeeded', payment_id: payment.id }],
        ['POST', '/webhook_endpoints', { url: 'http://127.0.0.1:9/hooks', events: ['*'] },
          { ...forged, secret: 'whsec_mine', status: 'enabled', disabled_reason: null }],
        ['PUT', `/wishes/${wish.id}`, { query: 'y' }, { ...forged, protocol: 'acp' }],
        ['PUT', `/webhook_endpoints/${ep.body.data.id}`, { enabled: true }, { ...forged, secret: 'whsec_mine', disabled_reason: null }],
      ]
      for (const [method, url, valid, extras] of cases) {
        for (const [member, value] of Object.entries(extras)) {
          assertInvalid(await c.request(method as never, url, { ...valid, [member]: value }), member, 'parameter_unknown')
        }
      }
      assertInvalid(await c.request('POST', '/wishes', { query: 'x', budget: { max: 1, currency: 'usd', account_id: b.id } }), 'budget.account_id', 'parameter_unknown')
      assert.deepEqual(await totals(), before, 'nothing was written')
    })

    test('a read key cannot write (403 insufficient_scope) and nothing changes', async () => {
      const writes: Array<[string, string, unknown]> = [
        ['POST', '/wishes', { query: 'x' }],
        ['PUT', `/wishes/${A.wish}`, { status: 'cancelled' }],
        ['DELETE', `/wishes/${A.wish}`, undefined],
        ['POST', '/mandates', { protocol: 'ap2', max_amount: 100, expires_at: inFuture(t, HOUR) }],
        ['POST', `/mandates/${A.mandate}/revoke`, {}],
        ['POST', '/payments', { mandate_id: A.mandate, amount: 100, idempotency_key: randomUUID() }],
        ['POST', `/payments/${A.payment}/refunds`, { amount: 1, idempotency_key: randomUUID() }],
        ['POST', '/webhook_endpoints', { url: 'http://127.0.0.1:9/hooks', events: ['*'] }],
        ['PUT', `/webhook_endpoints/${A.endpoint}`, { enabled: false }],
        ['DELETE', `/webhook_endpoints/${A.endpoint}`, undefined],
      ]
      for (const [method, url, body] of writes) {
        const res = await a.request(method as never, url, body, { key: a.readKey })
        assertError(res, 403, 'permission_error', 'insufficient_scope')
        assertNoData(res)
      }
      assert.deepEqual(await readAll(a), snapshot, 'nothing changed')
      assert.deepEqual(await readAll({ ...a, request: (m, u, bd, o) => a.request(m, u, bd, { ...o, key: a.readKey }) }), snapshot, 'the read key reads')
    })
  })
}
