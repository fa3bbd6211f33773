import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { createBackgroundWork } from '../../src/jobs/index.js'
import { newId } from '../../src/lib/ids.js'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertError, assertInvalid, assertNotFound, ids, ISO_MS, newestFirst, PAGING_QUERY_CASES, requestIdOf } from '../helpers/assertions.js'
import { createMandate, createMandateRaw, createWish, DAY_MS, getData, getList } from '../helpers/fixtures.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * The events API of contract section 7: every state change is an event with the object as the API
 * returned it and the request that caused it; GET /events (newest first, `type` filter, list rules
 * of section 1), GET /events/:id, account isolation, and 30 days of retention.
 */

const EVENT_ID = /^evt_[0-9A-Za-z]{16,}$/
const SETTLE_MS = 1000
const silent = { info() {}, warn() {}, error() {} }

for (const kind of storeKinds()) {
  describe(`events (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind, { SANDBOX_SETTLEMENT_DELAY_MS: String(SETTLE_MS), RATE_LIMIT_PER_SECOND: '100000' }) })
    after(async () => { await t.close() })

    const list = (a: TestAccount, qs = '') => getList(a, `/events${qs}`)
    const wishBody = (n = 1) => ({ query: `thing ${n}`, budget: { max: 100, currency: 'USD' } })

    /** Moves the clock a second, so consecutive changes have distinct created_at. */
    const tick = () => t.clock.advance(1000)

    test('a change writes one event: {id evt_, type, created_at, data.object, request_id = the Request-Id}', async () => {
      const a = await t.account()
      const before = t.clock.now().toISOString()
      const res = await a.request('POST', '/wishes', wishBody())
      assert.equal(res.status, 201, res.raw)
      const page = await list(a)
      assert.equal(page.data.length, 1)
      assert.deepEqual(page.meta, { total: 1, limit: 10, offset: 0, has_more: false })
      const e = page.data[0]
      assert.deepEqual(Object.keys(e).sort(), ['created_at', 'data', 'id', 'request_id', 'type'])
      assert.match(e.id, EVENT_ID)
      assert.match(e.created_at, ISO_MS)
      assert.ok(e.created_at >= before && e.created_at <= t.clock.now().toISOString(), e.created_at)
      assert.deepEqual(e, {
        id: e.id,
        type: 'wish.created',
        created_at: res.body.data.created_at,
        data: { object: res.body.data },
        request_id: requestIdOf(res),
      })
      assert.deepEqual(await getData(a, `/events/${e.id}`), e, 'GET /events/:id is the listed event')
    })

    test('request_id is the Request-Id of the request that made each change', async () => {
      const a = await t.account()
      const created = await a.request('POST', '/wishes', wishBody())
      const wish = created.body.data
      tick()
      const updated = await a.request('PUT', `/wishes/${wish.id}`, { query: 'another thing' })
      assert.equal(updated.status, 200, updated.raw)
      tick()
      const deleted = await a.request('DELETE', `/wishes/${wish.id}`)
      assert.equal(deleted.status, 204, deleted.raw)
      tick()
      const mandate = await a.request('POST', '/mandates', { protocol: 'ap2', max_amount: 5000, expires_at: new Date(t.clock.now().getTime() + 3_600_000).toISOString() })
      assert.equal(mandate.status, 201, mandate.raw)
      tick()
      const paid = await a.request('POST', '/payments', { mandate_id: mandate.body.data.id, amount: 100, idempotency_key: randomUUID() })
      assert.equal(paid.status, 201, paid.raw)
      assert.equal(paid.body.data.status, 'succeeded')

      // Oldest first; the payment's three events share one transaction and one created_at, in id order.
      const events = (await list(a, '?limit=100')).data.reverse()
      assert.deepEqual(events.map((e: any) => [e.type, e.request_id]), [
        ['wish.created', requestIdOf(created)],
        ['wish.updated', requestIdOf(updated)],
        ['wish.deleted', requestIdOf(deleted)],
        ['mandate.created', requestIdOf(mandate)],
        ['payment.created', requestIdOf(paid)],
        ['payment.succeeded', requestIdOf(paid)],
        ['mandate.consumed', requestIdOf(paid)],
      ])
      assert.deepEqual(events[0].data.object, wish)
      assert.deepEqual(events[1].data.object, updated.body.data)
      assert.equal(events[2].data.object.id, wish.id)
      assert.deepEqual(events[3].data.object, mandate.body.data)
      assert.deepEqual(events[5].data.object, paid.body.data)
      assert.equal(events[6].data.object.status, 'consumed')
    })

    test('background changes (settlement) have request_id null', async () => {
      const a = await t.account()
      const mandate = await createMandateRaw(t, a, { max_amount: 2000 })
      assert.equal(mandate.status, 201, mandate.raw)
      const m = mandate.body.data
      const created = await a.request('POST', '/payments', { mandate_id: m.id, amount: 1500, payment_method: 'bank_transfer', idempotency_key: randomUUID() })
      assert.equal(created.status, 201, created.raw)
      assert.equal(created.body.data.status, 'pending')
      await t.jobs.runOnce()
      t.clock.advance(SETTLE_MS)
      await t.jobs.runOnce()
      const payment = await getData(a, `/payments/${created.body.data.id}`)
      assert.equal(payment.status, 'succeeded')

      const events = (await list(a, '?limit=100')).data.reverse()
      const byType = (type: string) => events.filter((e: any) => e.type === type)
      assert.deepEqual(events.map((e: any) => e.type), [
        'mandate.created', 'payment.created', 'payment.processing', 'payment.succeeded', 'mandate.consumed',
      ])
      assert.equal(byType('mandate.created')[0].request_id, requestIdOf(mandate))
      assert.equal(byType('payment.created')[0].request_id, requestIdOf(created))
      assert.equal(byType('payment.processing')[0].request_id, null)
      assert.equal(byType('payment.succeeded')[0].request_id, null)
      assert.equal(byType('mandate.consumed')[0].request_id, null)
      assert.deepEqual(byType('payment.succeeded')[0].data.object, payment)
      assert.equal(byType('payment.processing')[0].data.object.status, 'processing')
      assert.deepEqual(await getData(a, `/events/${byType('payment.processing')[0].id}`), byType('payment.processing')[0])
    })

    test('GET /events: newest first, default page, limit/offset echoed, total counts every event', async () => {
      const a = await t.account()
      const made: string[] = []
      for (let i = 0; i < 12; i++) {
        made.push((await createWish(a, wishBody(i))).id)
        if (i % 3 === 0) tick()
      }
      const all = (await list(a, '?limit=100')).data
      assert.equal(all.length, 12)
      assert.deepEqual(ids(all), ids(newestFirst(all)), 'created_at desc, then id desc')
      assert.deepEqual(all.map((e: any) => e.data.object.id), [...made].reverse(), 'newest change first')

      const first = await list(a)
      assert.deepEqual(first.meta, { total: 12, limit: 10, offset: 0, has_more: true })
      assert.deepEqual(ids(first.data), ids(all.slice(0, 10)))
      for (const offset of [0, 5, 10]) {
        const page = await list(a, `?limit=5&offset=${offset}`)
        assert.deepEqual(page.meta, { total: 12, limit: 5, offset, has_more: offset + 5 < 12 })
        assert.deepEqual(ids(page.data), ids(all.slice(offset, offset + 5)))
      }
      assert.deepEqual(ids((await list(a, '?limit=1')).data), [all[0].id])
      assert.deepEqual((await list(a, '?limit=100')).meta, { total: 12, limit: 100, offset: 0, has_more: false })
      assert.deepEqual(await list(a, '?offset=12'), { data: [], meta: { total: 12, limit: 10, offset: 12, has_more: false } })
    })

    test('GET /events?type= filters; total counts the matches', async () => {
      const a = await t.account()
      const w1 = await createWish(a, wishBody(1))
      tick()
      await createMandate(t, a)
      tick()
      const w2 = await createWish(a, wishBody(2))
      tick()
      const put = await a.request('PUT', `/wishes/${w2.id}`, { query: 'changed' })
      assert.equal(put.status, 200, put.raw)

      const created = await list(a, '?type=wish.created')
      assert.deepEqual(created.meta, { total: 2, limit: 10, offset: 0, has_more: false })
      assert.deepEqual(created.data.map((e: any) => [e.type, e.data.object.id]), [['wish.created', w2.id], ['wish.created', w1.id]])
      const second = await list(a, '?type=wish.created&limit=1&offset=1')
      assert.deepEqual(second.meta, { total: 2, limit: 1, offset: 1, has_more: false })
      assert.deepEqual(second.data.map((e: any) => e.data.object.id), [w1.id])
      assert.deepEqual((await list(a, '?type=mandate.created')).data.map((e: any) => e.type), ['mandate.created'])
      assert.deepEqual((await list(a, '?type=wish.updated')).data.map((e: any) => e.data.object.query), ['changed'])
      assert.deepEqual(await list(a, '?type=payment.failed'), { data: [], meta: { total: 0, limit: 10, offset: 0, has_more: false } })
      assert.equal((await list(a)).meta.total, 4)
    })

    test('GET /events invalid query parameters are 400', async () => {
      const a = await t.account()
      await createWish(a, wishBody())
      const cases: Array<[string, string, string]> = [
        ['?type=nope', 'type', 'parameter_invalid'],
        ['?type=WISH.CREATED', 'type', 'parameter_invalid'],
        ['?type=wish', 'type', 'parameter_invalid'],
        ['?type=*', 'type', 'parameter_invalid'],
        ...PAGING_QUERY_CASES,
      ]
      for (const [qs, param, code] of cases) {
        const res = await a.request('GET', `/events${qs}`)
        assert.doesNotThrow(() => assertInvalid(res, param, code), `${qs}: ${res.raw}`)
      }
    })

    test('GET /events/:id: 200; unknown 404; another account\'s event 404 and never listed', async () => {
      const a = await t.account()
      const b = await t.account()
      const wish = await createWish(a, wishBody())
      const [event] = (await list(a)).data
      assert.equal(event.data.object.id, wish.id)

      const got = await a.request('GET', `/events/${event.id}`)
      assert.equal(got.status, 200, got.raw)
      assert.deepEqual(Object.keys(got.body), ['data'])
      assert.deepEqual(got.body.data, event)
      assert.deepEqual(await getData({ ...a, request: (m, u, body, o) => a.request(m, u, body, { ...o, key: a.readKey }) }, `/events/${event.id}`), event, 'a read key can read events')

      assertNotFound(await a.request('GET', `/events/${newId('evt')}`))
      assertNotFound(await a.request('GET', '/events/nope'))
      assertNotFound(await b.request('GET', `/events/${event.id}`))
      assert.deepEqual(await list(b), { data: [], meta: { total: 0, limit: 10, offset: 0, has_more: false } })
      assert.deepEqual(await list(b, '?type=wish.created'), { data: [], meta: { total: 0, limit: 10, offset: 0, has_more: false } })

      const own = await createWish(b, wishBody(2))
      const bList = await list(b)
      assert.deepEqual(bList.data.map((e: any) => e.data.object.id), [own.id])
      assertNotFound(await a.request('GET', `/events/${bList.data[0].id}`))
      assert.deepEqual((await list(a)).data.map((e: any) => e.id), [event.id])
    })

    test('GET /events needs a key: 401 without one', async () => {
      const a = await t.account()
      assertError(await a.request('GET', '/events', undefined, { key: null }), 401, 'authentication_error', 'authentication_required')
      assertError(await a.request('GET', `/events/${newId('evt')}`, undefined, { key: 'sk_test_nope' }), 401, 'authentication_error', 'invalid_api_key')
    })
  })

  describe(`event retention (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind, {}) })
    after(async () => { await t.close() })

    async function insertEvent(accountId: string, createdAt: Date): Promise<string> {
      const id = newId('evt', createdAt)
      await t.store.db.kysely.insertInto('events').values({
        id,
        account_id: accountId,
        type: 'wish.created',
        object_id: newId('wish', createdAt),
        data: JSON.stringify({ object: { id: 'wish_x' } }),
        request_id: null,
        created_at: createdAt.toISOString(),
      }).execute()
      // With its count change, as every write of events records one (migration 0013).
      await t.store.db.kysely.insertInto('event_count_changes').values({ account_id: accountId, type: 'wish.created', n: 1 }).execute()
      return id
    }

    const eventIds = async (accountId: string) =>
      (await t.store.db.kysely.selectFrom('events').select('id').where('account_id', '=', accountId).orderBy('id').execute()).map((r) => r.id)

    test('events older than 30 days go on the first pass of a new runner; newer ones stay', async () => {
      const a = await t.account()
      const now = t.clock.now().getTime()
      const old = await insertEvent(a.id, new Date(now - 31 * DAY_MS))
      const justOld = await insertEvent(a.id, new Date(now - 30 * DAY_MS - 60_000))
      const young = await insertEvent(a.id, new Date(now - 29 * DAY_MS))
      const wish = await createWish(a, { query: 'kept' })
      const [current] = (await getList(a, '/events?type=wish.created')).data.filter((e: any) => e.data.object.id === wish.id)
      assert.ok(current)
      assert.equal((await getList(a, '/events')).meta.total, 4)
      assert.equal((await a.request('GET', `/events/${old}`)).status, 200, 'listed before retention ran')

      const runner = createBackgroundWork({ db: t.store.db, clock: t.clock, config: t.config, logger: silent, payments: t.services.payments })
      await runner.runOnce()
      await runner.stop()

      assert.deepEqual(await eventIds(a.id), [young, current.id].sort())
      assertNotFound(await a.request('GET', `/events/${old}`))
      assertNotFound(await a.request('GET', `/events/${justOld}`))
      assert.equal((await a.request('GET', `/events/${young}`)).status, 200)
      const after = await getList(a, '/events')
      assert.equal(after.meta.total, 2)
      assert.deepEqual(ids(after.data), [current.id, young])
    })

    test('t.jobs.runOnce() after the clock moves 31 days deletes what was made before; what is new stays', async () => {
      const a = await t.account()
      const first = await createWish(a, { query: 'old' })
      await t.jobs.runOnce()
      assert.equal((await getList(a, '/events')).meta.total, 1, 'a fresh event survives retention')

      t.clock.advance(29 * DAY_MS)
      await t.jobs.runOnce()
      assert.equal((await getList(a, '/events')).meta.total, 1, 'still kept at 29 days')

      t.clock.advance(2 * DAY_MS)
      const second = await createWish(a, { query: 'new' })
      await t.jobs.runOnce()
      const left = await getList(a, '/events')
      assert.deepEqual(left.data.map((e: any) => e.data.object.id), [second.id])
      assert.equal(left.meta.total, 1)
      assert.notEqual(first.id, second.id)
    })
  })
}
