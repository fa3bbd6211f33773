import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, afterEach, before, describe, test } from 'node:test'
import { newId } from '../../src/lib/ids.js'
import { send } from '../../src/modules/webhooks/sender.js'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { ids, ISO_MS, newestFirst } from '../helpers/assertions.js'
import { createMandate, createSucceededPayment, createWish, getData } from '../helpers/fixtures.js'
import { type Answer, freePort, type Receiver, startReceiver, tamper, verifyDelivery } from '../helpers/receiver.js'
import { accountEvents, createEndpoint, endpointFor, listAttempts, receiverIn } from '../helpers/webhooks.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Webhook endpoints and their deliveries (contract section 7): the endpoints API, Standard Webhooks v1
 * signatures checked by a real receiver with the `standardwebhooks` package, retries with backoff,
 * Retry-After, 410 Gone, event-type filtering, and the refusal of private targets (SSRF) both when an
 * endpoint is saved and when it is delivered to. This file: delivery, signatures, retries and the
 * sender; webhooks-endpoints.test.ts has the endpoints API and the refusals on save.
 */

const ATTEMPT_ID = /^wha_[0-9A-Za-z]{16,}$/
const ATTEMPT_KEYS = ['attempt', 'created_at', 'duration_ms', 'error', 'event_id', 'event_type', 'id', 'next_retry_at', 'status_code', 'succeeded']
const DELIVER_JOB = 'webhook.deliver'

for (const kind of storeKinds()) {
  describe(`webhooks: delivery (${kind.name})`, () => {
    /** WEBHOOK_ALLOW_PRIVATE=true, so endpoints may point at the local receiver. */
    let t: TestApp
    const receivers: Receiver[] = []

    before(async () => {
      t = await startTestApp(kind, { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCALE: '0.001', RATE_LIMIT_PER_SECOND: '100000' })
    })
    after(async () => {
      await t.close()
    })
    // Each test starts with no receiver and no queued work of an earlier one.
    afterEach(async () => {
      for (const r of receivers.splice(0)) await r.close()
      await t.store.db.kysely.deleteFrom('jobs').execute()
    })

    /** Runs the app's background runner until nothing due is left in this pass. */
    async function drain(): Promise<void> {
      while (await t.jobs.runOnce()) { /* a full batch: there may be more */ }
    }

    /** Delivery jobs still queued for an endpoint. */
    async function queuedFor(endpointId: string): Promise<number> {
      const rows = await t.store.db.kysely.selectFrom('jobs').select('payload').where('type', '=', DELIVER_JOB).execute()
      return rows.filter((r) => (JSON.parse(r.payload) as { endpoint_id: string }).endpoint_id === endpointId).length
    }

    /** Every delivery verified on arrival; its webhook-id is the event id and its body is GET /events/:id. */
    async function assertAuthentic(a: TestAccount, r: Receiver): Promise<void> {
      for (const d of r.deliveries) {
        assert.equal(d.verifyError, null, `delivery ${d.headers['webhook-id']} verifies`)
        assert.equal(d.verified, true)
        assert.equal(d.method, 'POST')
        assert.equal(d.path, '/hooks')
        const event = await getData(a, `/events/${d.headers['webhook-id']}`)
        assert.deepEqual(JSON.parse(d.body), event, 'the body is the event')
      }
    }

    function retryWait(attempt: any): number {
      assert.match(attempt.next_retry_at, ISO_MS)
      return Date.parse(attempt.next_retry_at) - Date.parse(attempt.created_at)
    }

    // ---------------------------------------------------------------- delivery

    test('delivery: signed per Standard Webhooks v1; webhook-id is the event id; the body is GET /events/:id', async () => {
      const a = await t.account()
      const r = await receiverIn(receivers)
      const ep = await endpointFor(a, r)
      const wish = await createWish(a, { query: 'a kettle' })
      assert.equal(r.deliveries.length, 0, 'nothing is sent before the runner runs')
      assert.equal(await queuedFor(ep.id), 1, 'the delivery was queued with the change')

      const sentFrom = Math.floor(t.clock.now().getTime() / 1000)
      await drain()
      const sentTo = Math.floor(t.clock.now().getTime() / 1000)
      assert.equal(r.deliveries.length, 1)
      const d = r.deliveries[0]!
      const [event] = await accountEvents(a)
      assert.equal(event.type, 'wish.created')
      assert.deepEqual(event.data.object, wish)
      assert.equal(d.verifyError, null)
      assert.equal(d.headers['webhook-id'], event.id)
      assert.match(d.headers['webhook-timestamp']!, /^\d+$/)
      const stamp = Number(d.headers['webhook-timestamp'])
      assert.ok(stamp >= sentFrom && stamp <= sentTo, `webhook-timestamp ${stamp} within [${sentFrom}, ${sentTo}]`)
      assert.match(d.headers['webhook-signature']!, /^v1,[A-Za-z0-9+/]+={0,2}$/)
      assert.match(d.headers['content-type']!, /^application\/json/)
      assert.deepEqual(JSON.parse(d.body), await getData(a, `/events/${event.id}`))
      assert.deepEqual(verifyDelivery(ep.secret, d.body, d.headers), event)
      await assertAuthentic(a, r)

      // An integrator's check refuses anything changed.
      for (const index of [0, Math.floor(d.body.length / 2), d.body.length - 1, d.body.indexOf(wish.id) + 6]) {
        assert.throws(() => verifyDelivery(ep.secret, tamper(d.body, index), d.headers), `byte ${index} changed`)
      }
      assert.throws(() => verifyDelivery(ep.secret, d.body.replace('a kettle', 'a kettlf'), d.headers))
      assert.throws(() => verifyDelivery(ep.secret, d.body, { ...d.headers, 'webhook-id': newId('evt') }))
      assert.throws(() => verifyDelivery(ep.secret, d.body, { ...d.headers, 'webhook-timestamp': String(stamp + 1) }))
      assert.throws(() => verifyDelivery(`whsec_${randomBytes(24).toString('base64')}`, d.body, d.headers), 'another secret')

      const log = await listAttempts(a, ep.id)
      assert.deepEqual(log.meta, { total: 1, limit: 10, offset: 0, has_more: false })
      const attempt = log.data[0]
      assert.deepEqual(Object.keys(attempt).sort(), ATTEMPT_KEYS)
      assert.match(attempt.id, ATTEMPT_ID)
      assert.match(attempt.created_at, ISO_MS)
      assert.ok(Number.isInteger(attempt.duration_ms) && attempt.duration_ms >= 0)
      assert.deepEqual(attempt, {
        id: attempt.id,
        event_id: event.id,
        event_type: 'wish.created',
        attempt: 1,
        status_code: 200,
        error: null,
        succeeded: true,
        duration_ms: attempt.duration_ms,
        next_retry_at: null,
        created_at: attempt.created_at,
      })
      assert.equal(await queuedFor(ep.id), 0, 'a delivered event is done')

      // More changes, more deliveries: one per event, each with its own id, none twice.
      const put = await a.request('PUT', `/wishes/${wish.id}`, { query: 'a red kettle' })
      assert.equal(put.status, 200, put.raw)
      await createMandate(t, a)
      await drain()
      t.clock.advance(2000)
      await drain()
      const events = await accountEvents(a)
      assert.equal(events.length, 3)
      assert.deepEqual([...r.ids()].sort(), ids(events).sort())
      assert.equal(new Set(r.ids()).size, 3)
      await assertAuthentic(a, r)
      assert.equal((await listAttempts(a, ep.id)).meta.total, 3)
    })

    test('a failed delivery (500) is retried on the backoff schedule until it succeeds', async () => {
      const a = await t.account()
      const r = await receiverIn(receivers, { respond: (_, n) => ({ status: n < 2 ? 500 : 200 }) })
      const ep = await endpointFor(a, r, ['wish.created'])
      await createWish(a, { query: 'retry me' })
      const [event] = await accountEvents(a)

      await drain()
      assert.deepEqual(r.deliveries.map((d) => d.answered), [500])
      let log = await listAttempts(a, ep.id)
      assert.equal(log.meta.total, 1)
      const first = log.data[0]
      assert.deepEqual(first, { ...first, event_id: event.id, event_type: 'wish.created', attempt: 1, status_code: 500, succeeded: false })
      assert.equal(typeof first.error, 'string')
      assert.ok(first.error.length > 0)
      const wait1 = retryWait(first)
      assert.ok(wait1 >= 4 && wait1 <= 6, `first retry 5 s x 0.001 +-10 %: ${wait1} ms`)
      assert.equal(await queuedFor(ep.id), 1)

      t.clock.advance(wait1 + 50)
      await drain()
      assert.deepEqual(r.deliveries.map((d) => d.answered), [500, 500])
      log = await listAttempts(a, ep.id)
      const second = log.data[0]
      assert.deepEqual(second, { ...second, event_id: event.id, attempt: 2, status_code: 500, succeeded: false })
      const wait2 = retryWait(second)
      assert.ok(wait2 >= 270 && wait2 <= 330, `second retry 300 s x 0.001 +-10 %: ${wait2} ms`)
      await drain()
      // A pass that ended before next_retry_at claimed nothing (asserted only when the machine was that quick).
      if (t.clock.now().getTime() < Date.parse(second.next_retry_at)) assert.equal(r.deliveries.length, 2, 'not retried before next_retry_at')

      t.clock.advance(wait2 + 50)
      await drain()
      assert.deepEqual(r.deliveries.map((d) => d.answered), [500, 500, 200])
      log = await listAttempts(a, ep.id)
      assert.deepEqual(log.meta, { total: 3, limit: 10, offset: 0, has_more: false })
      assert.deepEqual(log.data.map((x: any) => [x.attempt, x.status_code, x.succeeded]), [[3, 200, true], [2, 500, false], [1, 500, false]], 'newest first')
      assert.deepEqual(ids(log.data), ids(newestFirst(log.data)))
      assert.equal(log.data[0].error, null)
      assert.equal(log.data[0].next_retry_at, null)
      assert.deepEqual(log.data.map((x: any) => x.event_id), [event.id, event.id, event.id])
      assert.deepEqual(r.ids(), [event.id, event.id, event.id], 'every retry carries the same webhook-id')
      assert.equal(new Set(r.deliveries.map((d) => d.body)).size, 1, 'and the same body')
      await assertAuthentic(a, r)
      assert.deepEqual(ids((await listAttempts(a, ep.id, '?limit=1&offset=1')).data), [log.data[1].id])

      assert.equal(await queuedFor(ep.id), 0)
      t.clock.advance(5000)
      await drain()
      assert.equal(r.deliveries.length, 3, 'nothing more once delivered')
    })

    test('Retry-After on 429 and 503 sets the next attempt: next_retry_at = now + Retry-After', async () => {
      const a = await t.account()
      const answers: Answer[] = [
        { status: 429, headers: { 'retry-after': '7' } },
        { status: 503, headers: { 'retry-after': '3' } },
        { status: 204 },
      ]
      const r = await receiverIn(receivers, { respond: (_, n) => answers[n] ?? { status: 200 } })
      const ep = await endpointFor(a, r)
      await createWish(a, { query: 'slow down' })

      await drain()
      let [latest] = (await listAttempts(a, ep.id)).data
      assert.deepEqual([latest.attempt, latest.status_code, latest.succeeded], [1, 429, false])
      assert.equal(retryWait(latest), 7000, 'Retry-After: 7')
      t.clock.advance(5000)
      await drain()
      assert.equal(r.deliveries.length, 1, 'not before Retry-After')
      t.clock.advance(2500)
      await drain()
      assert.equal(r.deliveries.length, 2)
      latest = (await listAttempts(a, ep.id)).data[0]
      assert.deepEqual([latest.attempt, latest.status_code, latest.succeeded], [2, 503, false])
      assert.equal(retryWait(latest), 3000, 'Retry-After: 3')
      t.clock.advance(2000)
      await drain()
      assert.equal(r.deliveries.length, 2, 'not before Retry-After')
      t.clock.advance(1500)
      await drain()
      assert.deepEqual(r.deliveries.map((d) => d.answered), [429, 503, 204])
      const log = await listAttempts(a, ep.id)
      assert.deepEqual(log.data.map((x: any) => [x.attempt, x.status_code, x.succeeded, x.next_retry_at === null]), [
        [3, 204, true, true], [2, 503, false, false], [1, 429, false, false],
      ])
      await assertAuthentic(a, r)
    })

    test('410 Gone disables the endpoint: no retry, no more deliveries until it is enabled again', async () => {
      const a = await t.account()
      let status = 410
      const r = await receiverIn(receivers, { respond: () => ({ status }) })
      const ep = await endpointFor(a, r)
      await createWish(a, { query: 'first' })
      await drain()
      assert.deepEqual(r.deliveries.map((d) => d.answered), [410])

      const [attempt] = (await listAttempts(a, ep.id)).data
      assert.deepEqual([attempt.attempt, attempt.status_code, attempt.succeeded, attempt.next_retry_at], [1, 410, false, null])
      const disabled = await getData(a, `/webhook_endpoints/${ep.id}`)
      assert.equal(disabled.enabled, false)
      assert.equal(typeof disabled.disabled_reason, 'string')
      assert.match(disabled.disabled_reason, /410/)
      assert.equal(await queuedFor(ep.id), 0, 'no retry after 410')

      await createWish(a, { query: 'second' })
      assert.equal(await queuedFor(ep.id), 0, 'nothing is queued for a disabled endpoint')
      t.clock.advance(2000)
      await drain()
      assert.equal(r.deliveries.length, 1, 'a disabled endpoint receives nothing')

      status = 200
      const enabled = await a.request('PUT', `/webhook_endpoints/${ep.id}`, { enabled: true })
      assert.equal(enabled.status, 200, enabled.raw)
      assert.equal(enabled.body.data.enabled, true)
      assert.equal(enabled.body.data.disabled_reason, null)
      const third = await createWish(a, { query: 'third' })
      await drain()
      assert.equal(r.deliveries.length, 2)
      const delivered = JSON.parse(r.deliveries[1]!.body)
      assert.equal(delivered.data.object.id, third.id, 'only what happened after re-enabling')
      await assertAuthentic(a, r)
    })

    test('a refused connection is a failed attempt (status_code null, error text) and is retried', async () => {
      const a = await t.account()
      const port = await freePort()
      const ep = await createEndpoint(a, { url: `http://127.0.0.1:${port}/hooks`, events: ['*'] })
      await createWish(a, { query: 'nobody home' })
      const [event] = await accountEvents(a)
      await drain()

      const [failed] = (await listAttempts(a, ep.id)).data
      assert.deepEqual([failed.attempt, failed.event_id, failed.status_code, failed.succeeded], [1, event.id, null, false])
      assert.equal(typeof failed.error, 'string')
      assert.match(failed.error, /ECONNREFUSED|refused/i)
      const wait = retryWait(failed)
      assert.ok(wait >= 4 && wait <= 6, `${wait} ms`)

      const r = await receiverIn(receivers, { port })
      r.secret = ep.secret
      t.clock.advance(1000)
      await drain()
      assert.deepEqual(r.ids(), [event.id])
      await assertAuthentic(a, r)
      const log = await listAttempts(a, ep.id)
      assert.deepEqual(log.data.map((x: any) => [x.attempt, x.status_code, x.succeeded, x.error]), [[2, 200, true, null], [1, null, false, failed.error]])
    })

    test('event-type filtering: each endpoint gets what it subscribed to; disabled and deleted ones get nothing', async () => {
      const a = await t.account()
      const b = await t.account()
      const rOnly = await receiverIn(receivers)
      const rAll = await receiverIn(receivers)
      const rSome = await receiverIn(receivers)
      const rDisabled = await receiverIn(receivers)
      const rDeleted = await receiverIn(receivers)
      const rOff = await receiverIn(receivers)
      const only = await endpointFor(a, rOnly, ['payment.succeeded'])
      const all = await endpointFor(a, rAll, ['*'])
      const some = await endpointFor(a, rSome, ['wish.created', 'mandate.created'])
      const disabled = await endpointFor(a, rDisabled, ['*'])
      const deleted = await endpointFor(a, rDeleted, ['*'])
      const off = await endpointFor(a, rOff, ['*'])
      assert.equal((await a.request('PUT', `/webhook_endpoints/${off.id}`, { enabled: false })).status, 200)

      // Queued while these two were enabled: dropped once they are not.
      await createWish(a, { query: 'before' })
      assert.equal(await queuedFor(disabled.id), 1)
      assert.equal(await queuedFor(deleted.id), 1)
      assert.equal(await queuedFor(off.id), 0)
      assert.equal((await a.request('PUT', `/webhook_endpoints/${disabled.id}`, { enabled: false })).status, 200)
      assert.equal((await a.request('DELETE', `/webhook_endpoints/${deleted.id}`)).status, 204)

      const m = await createMandate(t, a)
      await createSucceededPayment(a, m.id, 100)
      await createWish(b, { query: 'another account' })
      await drain()
      t.clock.advance(1000)
      await drain()

      const events = await accountEvents(a)
      const idsOf = (...types: string[]) => events.filter((e: any) => types.includes(e.type)).map((e: any) => e.id).sort()
      assert.deepEqual(events.map((e: any) => e.type).sort(), ['mandate.consumed', 'mandate.created', 'payment.created', 'payment.succeeded', 'wish.created'])
      assert.deepEqual([...rAll.ids()].sort(), ids(events).sort(), '["*"] receives every event of the account')
      assert.deepEqual(rOnly.ids(), idsOf('payment.succeeded'))
      assert.deepEqual([...rSome.ids()].sort(), idsOf('wish.created', 'mandate.created'))
      assert.deepEqual(rDisabled.deliveries, [])
      assert.deepEqual(rDeleted.deliveries, [])
      assert.deepEqual(rOff.deliveries, [])
      for (const r of [rAll, rOnly, rSome]) await assertAuthentic(a, r)
      assert.equal((await listAttempts(a, disabled.id)).meta.total, 0, 'a dropped delivery is no attempt')
      for (const ep of [only, all, some, disabled, deleted, off]) assert.equal(await queuedFor(ep.id), 0)

      // Changing the types changes what comes next.
      const retyped = await a.request('PUT', `/webhook_endpoints/${only.id}`, { events: ['wish.created'] })
      assert.equal(retyped.status, 200, retyped.raw)
      const later = await createWish(a, { query: 'after' })
      await drain()
      assert.equal(rOnly.deliveries.length, 2)
      assert.equal(JSON.parse(rOnly.deliveries[1]!.body).data.object.id, later.id)
      assert.equal(rAll.deliveries.length, 6)
    })
  })
}

describe('webhook sender', () => {
  test('a receiver that never answers: the attempt times out with status_code null and error text', async () => {
    const r = await startReceiver({ respond: () => 'hang' })
    try {
      const started = Date.now()
      const result = await send({
        url: r.url, secret: `whsec_${randomBytes(24).toString('base64')}`, eventId: newId('evt'), body: '{}', now: new Date(), allowPrivate: true, timeoutMs: 300,
      })
      const took = Date.now() - started
      assert.equal(result.statusCode, null)
      assert.equal(typeof result.error, 'string')
      assert.match(result.error!, /timed out/)
      assert.equal(result.retryAfterSeconds, null)
      assert.ok(took >= 250 && took < 5000, `gave up after the timeout: ${took} ms`)
      assert.deepEqual(r.deliveries.map((d) => d.answered), ['hung'], 'the request did arrive')
    } finally {
      await r.close()
    }
  })
})
