import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, afterEach, before, describe, test } from 'node:test'
import { createBackgroundWork } from '../../src/jobs/index.js'
import { newId } from '../../src/lib/ids.js'
import { send } from '../../src/modules/webhooks/sender.js'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertError, assertInvalid, assertNotFound, ids, ISO_MS, newestFirst } from '../helpers/assertions.js'
import { createMandate, createSucceededPayment, createWish, getData, getList } from '../helpers/fixtures.js'
import { type Answer, freePort, type Receiver, type Responder, startReceiver, tamper, verifyDelivery } from '../helpers/receiver.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Webhook endpoints and their deliveries (contract section 7): the endpoints API, Standard Webhooks v1
 * signatures checked by a real receiver with the `standardwebhooks` package, retries with backoff,
 * Retry-After, 410 Gone, event-type filtering, and the refusal of private targets (SSRF) both when an
 * endpoint is saved and when it is delivered to.
 */

const ENDPOINT_ID = /^we_[0-9A-Za-z]{16,}$/
const ATTEMPT_ID = /^wha_[0-9A-Za-z]{16,}$/
const SECRET = /^whsec_[A-Za-z0-9+/]{32}$/
const ENDPOINT_KEYS = ['created_at', 'description', 'disabled_reason', 'enabled', 'events', 'id', 'updated_at', 'url']
const ATTEMPT_KEYS = ['attempt', 'created_at', 'duration_ms', 'error', 'event_id', 'event_type', 'id', 'next_retry_at', 'status_code', 'succeeded']
const DELIVER_JOB = 'webhook.deliver'
const silent = { info() {}, warn() {}, error() {} }

/** Targets a default configuration (no WEBHOOK_ALLOW_PRIVATE) must refuse. */
const PRIVATE_URLS = [
  'http://127.0.0.1/hooks',
  'http://127.0.0.1:8080/hooks',
  'http://127.1.2.3/hooks',
  'http://localhost/hooks',
  'http://localhost:3000/hooks',
  'http://10.0.0.5/hooks',
  'https://10.255.255.255/hooks',
  'http://192.168.1.1/hooks',
  'http://172.16.0.1/hooks',
  'http://172.31.255.254/hooks',
  'http://169.254.169.254/latest/meta-data/',
  'http://[::1]/hooks',
  'http://[::ffff:10.0.0.1]/hooks',
  'http://[::ffff:127.0.0.1]/hooks',
  'http://[fe80::1]/hooks',
  'http://[fc00::1]/hooks',
  'http://224.0.0.1/hooks',
  'http://0.0.0.0/hooks',
  'http://100.64.0.1/hooks',
  // Other spellings of 127.0.0.1 that the URL parser normalizes.
  'http://2130706433/hooks',
  'http://0x7f.0.0.1/hooks',
]
/** Refused whatever WEBHOOK_ALLOW_PRIVATE says. */
const MALFORMED_URLS = [
  'ftp://8.8.8.8/hooks',
  'file:///etc/passwd',
  'javascript:alert(1)',
  'http://user:pass@8.8.8.8/hooks',
  'https://user@8.8.8.8/hooks',
  'not a url',
  '/hooks',
  '',
]

for (const kind of storeKinds()) {
  describe(`webhooks (${kind.name})`, () => {
    /** WEBHOOK_ALLOW_PRIVATE=true, so endpoints may point at the local receiver. */
    let t: TestApp
    /** The default configuration: private targets are refused. */
    let strict: TestApp
    const receivers: Receiver[] = []

    before(async () => {
      t = await startTestApp(kind, { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCALE: '0.001', RATE_LIMIT_PER_SECOND: '100000' })
      strict = await startTestApp(kind, { RATE_LIMIT_PER_SECOND: '100000' })
    })
    after(async () => {
      await t.close()
      await strict.close()
    })
    // Each test starts with no receiver and no queued work of an earlier one.
    afterEach(async () => {
      for (const r of receivers.splice(0)) await r.close()
      await t.store.db.kysely.deleteFrom('jobs').execute()
    })

    async function receiver(options: { port?: number, respond?: Responder } = {}): Promise<Receiver> {
      const r = await startReceiver(options)
      receivers.push(r)
      return r
    }

    async function createEndpoint(a: TestAccount, body: Record<string, unknown>): Promise<any> {
      const res = await a.request('POST', '/webhook_endpoints', body)
      assert.equal(res.status, 201, res.raw)
      return res.body.data
    }

    /** An endpoint of `a` for `events` that delivers to `r`, whose secret the receiver then knows. */
    async function endpointFor(a: TestAccount, r: Receiver, events: string[] = ['*']): Promise<any> {
      const ep = await createEndpoint(a, { url: r.url, events })
      r.secret = ep.secret
      return ep
    }

    /** Runs the app's background runner until nothing due is left in this pass. */
    async function drain(): Promise<void> {
      while (await t.jobs.runOnce()) { /* a full batch: there may be more */ }
    }

    const attempts = (a: TestAccount, endpointId: string, qs = '') => getList(a, `/webhook_endpoints/${endpointId}/deliveries${qs}`)
    const accountEvents = async (a: TestAccount) => (await getList(a, '/events?limit=100')).data

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

    // ---------------------------------------------------------------- endpoints API

    test('POST /webhook_endpoints 201: shape; the whsec_ secret is in this response only', async () => {
      const a = await t.account()
      const before = t.clock.now().toISOString()
      const res = await a.request('POST', '/webhook_endpoints', { url: 'https://8.8.8.8/hooks', events: ['payment.succeeded', 'payment.failed'], description: 'orders' })
      assert.equal(res.status, 201, res.raw)
      assert.deepEqual(Object.keys(res.body), ['data'])
      const ep = res.body.data
      assert.match(ep.id, ENDPOINT_ID)
      assert.match(ep.secret, SECRET)
      assert.match(ep.created_at, ISO_MS)
      assert.ok(ep.created_at >= before && ep.created_at <= t.clock.now().toISOString())
      assert.deepEqual(ep, {
        id: ep.id,
        url: 'https://8.8.8.8/hooks',
        events: ['payment.succeeded', 'payment.failed'],
        description: 'orders',
        enabled: true,
        disabled_reason: null,
        created_at: ep.created_at,
        updated_at: ep.created_at,
        secret: ep.secret,
      })
      const { secret, ...shown } = ep

      const got = await a.request('GET', `/webhook_endpoints/${ep.id}`)
      assert.equal(got.status, 200, got.raw)
      assert.deepEqual(got.body.data, shown)
      assert.ok(!got.raw.includes(secret), 'GET never shows the secret')
      const listed = await a.request('GET', '/webhook_endpoints')
      assert.equal(listed.status, 200, listed.raw)
      assert.deepEqual(listed.body, { data: [shown], meta: { total: 1, limit: 10, offset: 0 } })
      assert.ok(!listed.raw.includes(secret), 'the list never shows the secret')
      const put = await a.request('PUT', `/webhook_endpoints/${ep.id}`, { description: 'renamed' })
      assert.equal(put.status, 200, put.raw)
      assert.deepEqual(Object.keys(put.body.data).sort(), ENDPOINT_KEYS)
      assert.ok(!put.raw.includes(secret), 'PUT never shows the secret')
      const noop = await a.request('PUT', `/webhook_endpoints/${ep.id}`, {})
      assert.equal(noop.status, 200, noop.raw)
      assert.deepEqual(Object.keys(noop.body.data).sort(), ENDPOINT_KEYS)

      const other = await createEndpoint(a, { url: 'https://8.8.4.4/hooks', events: ['*'] })
      assert.equal(other.description, null, 'description defaults to null')
      assert.deepEqual(other.events, ['*'])
      assert.notEqual(other.secret, secret, 'every endpoint has its own secret')
    })

    test('POST /webhook_endpoints validation: 400 and nothing is created', async () => {
      const a = await t.account()
      const url = 'https://8.8.8.8/hooks'
      const cases: Array<[string, Record<string, unknown>, string, string]> = [
        ['events empty', { url, events: [] }, 'events', 'parameter_invalid'],
        ['events unknown type', { url, events: ['payment.exploded'] }, 'events.0', 'parameter_invalid'],
        ['events unknown second type', { url, events: ['wish.created', 'wish.*'] }, 'events.1', 'parameter_invalid'],
        ['events duplicates', { url, events: ['wish.created', 'wish.created'] }, 'events', 'parameter_invalid'],
        ['events a string', { url, events: '*' }, 'events', 'parameter_invalid'],
        ['events missing', { url }, 'events', 'parameter_missing'],
        ['url missing', { events: ['*'] }, 'url', 'parameter_missing'],
        ['url a number', { url: 42, events: ['*'] }, 'url', 'parameter_invalid'],
        ['description too long', { url, events: ['*'], description: 'x'.repeat(501) }, 'description', 'parameter_invalid'],
        ['secret is not settable', { url, events: ['*'], secret: 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }, 'secret', 'parameter_unknown'],
        ['enabled is not a create member', { url, events: ['*'], enabled: false }, 'enabled', 'parameter_unknown'],
      ]
      for (const bad of MALFORMED_URLS) cases.push([`url ${JSON.stringify(bad)}`, { url: bad, events: ['*'] }, 'url', 'parameter_invalid'])
      for (const [name, body, param, code] of cases) {
        const res = await a.request('POST', '/webhook_endpoints', body)
        assert.doesNotThrow(() => assertInvalid(res, param, code), `${name}: ${res.raw}`)
      }
      assert.deepEqual(await getList(a, '/webhook_endpoints'), { data: [], meta: { total: 0, limit: 10, offset: 0 } })
    })

    test('GET /webhook_endpoints: newest first, limit/offset', async () => {
      const a = await t.account()
      const made: string[] = []
      for (let i = 0; i < 4; i++) {
        made.push((await createEndpoint(a, { url: `https://8.8.8.8/hooks/${i}`, events: ['*'] })).id)
        if (i % 2 === 0) t.clock.advance(5)
      }
      const all = await getList(a, '/webhook_endpoints')
      assert.deepEqual(all.meta, { total: 4, limit: 10, offset: 0 })
      assert.deepEqual(ids(all.data), [...made].reverse())
      assert.deepEqual(ids(all.data), ids(newestFirst(all.data)))
      const page = await getList(a, '/webhook_endpoints?limit=2&offset=1')
      assert.deepEqual(page.meta, { total: 4, limit: 2, offset: 1 })
      assert.deepEqual(ids(page.data), [made[2], made[1]])
      assertInvalid(await a.request('GET', '/webhook_endpoints?limit=0'), 'limit')
      assertInvalid(await a.request('GET', '/webhook_endpoints?offset=-1'), 'offset')
    })

    test('PUT /webhook_endpoints/:id updates url, events, enabled, description; validation 400 changes nothing', async () => {
      const a = await t.account()
      const ep = await createEndpoint(a, { url: 'https://8.8.8.8/hooks', events: ['wish.created'], description: 'first' })
      const { secret: _secret, ...original } = ep
      const put = async (body: Record<string, unknown>) => {
        t.clock.advance(10)
        const res = await a.request('PUT', `/webhook_endpoints/${ep.id}`, body)
        assert.equal(res.status, 200, res.raw)
        assert.deepEqual(res.body.data, await getData(a, `/webhook_endpoints/${ep.id}`), 'the answer is what is stored')
        return res.body.data
      }

      const moved = await put({ url: 'https://8.8.4.4/other' })
      assert.ok(moved.updated_at > original.updated_at)
      assert.deepEqual(moved, { ...original, url: 'https://8.8.4.4/other', updated_at: moved.updated_at })
      const retyped = await put({ events: ['payment.succeeded', 'payment.refunded'] })
      assert.deepEqual(retyped, { ...moved, events: ['payment.succeeded', 'payment.refunded'], updated_at: retyped.updated_at })
      const noted = await put({ description: null })
      assert.deepEqual(noted, { ...retyped, description: null, updated_at: noted.updated_at })
      const off = await put({ enabled: false })
      assert.equal(off.enabled, false)
      assert.equal(typeof off.disabled_reason, 'string')
      assert.ok(off.disabled_reason.length > 0)
      assert.deepEqual(off, { ...noted, enabled: false, disabled_reason: off.disabled_reason, updated_at: off.updated_at })
      const on = await put({ enabled: true })
      assert.deepEqual(on, { ...noted, updated_at: on.updated_at })
      const all = await put({ url: 'https://8.8.8.8/all', events: ['*'], description: 'all', enabled: true })
      assert.deepEqual(all, { ...on, url: 'https://8.8.8.8/all', events: ['*'], description: 'all', updated_at: all.updated_at })

      const cases: Array<[string, Record<string, unknown>, string, string]> = [
        ['events empty', { events: [] }, 'events', 'parameter_invalid'],
        ['events unknown type', { events: ['nope'] }, 'events.0', 'parameter_invalid'],
        ['events duplicates', { events: ['*', '*'] }, 'events', 'parameter_invalid'],
        ['enabled a string', { enabled: 'yes' }, 'enabled', 'parameter_invalid'],
        ['secret is not settable', { secret: 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }, 'secret', 'parameter_unknown'],
        ['status is not settable', { status: 'enabled' }, 'status', 'parameter_unknown'],
      ]
      for (const bad of MALFORMED_URLS) cases.push([`url ${JSON.stringify(bad)}`, { url: bad }, 'url', 'parameter_invalid'])
      for (const [name, body, param, code] of cases) {
        const res = await a.request('PUT', `/webhook_endpoints/${ep.id}`, body)
        assert.doesNotThrow(() => assertInvalid(res, param, code), `${name}: ${res.raw}`)
      }
      assert.deepEqual(await getData(a, `/webhook_endpoints/${ep.id}`), all, 'refused updates changed nothing')
    })

    test('DELETE /webhook_endpoints/:id 204, then 404 everywhere', async () => {
      const a = await t.account()
      const keep = await createEndpoint(a, { url: 'https://8.8.8.8/keep', events: ['*'] })
      const ep = await createEndpoint(a, { url: 'https://8.8.8.8/gone', events: ['*'] })
      const res = await a.request('DELETE', `/webhook_endpoints/${ep.id}`)
      assert.equal(res.status, 204, res.raw)
      assert.equal(res.raw, '')
      assertNotFound(await a.request('GET', `/webhook_endpoints/${ep.id}`))
      assertNotFound(await a.request('PUT', `/webhook_endpoints/${ep.id}`, { enabled: false }))
      assertNotFound(await a.request('DELETE', `/webhook_endpoints/${ep.id}`))
      assertNotFound(await a.request('GET', `/webhook_endpoints/${ep.id}/deliveries`))
      assert.deepEqual(ids((await getList(a, '/webhook_endpoints')).data), [keep.id])
      assertNotFound(await a.request('GET', `/webhook_endpoints/${newId('we')}`))
    })

    test('another account\'s endpoint is 404 and untouched; a read key reads but cannot write (403)', async () => {
      const a = await t.account()
      const b = await t.account()
      const ep = await createEndpoint(a, { url: 'https://8.8.8.8/hooks', events: ['*'] })
      const { secret: _secret, ...shown } = ep

      assertNotFound(await b.request('GET', `/webhook_endpoints/${ep.id}`))
      assertNotFound(await b.request('PUT', `/webhook_endpoints/${ep.id}`, { url: 'https://8.8.4.4/stolen', enabled: false }))
      assertNotFound(await b.request('DELETE', `/webhook_endpoints/${ep.id}`))
      assertNotFound(await b.request('GET', `/webhook_endpoints/${ep.id}/deliveries`))
      assert.deepEqual(await getList(b, '/webhook_endpoints'), { data: [], meta: { total: 0, limit: 10, offset: 0 } })
      assert.deepEqual(await getData(a, `/webhook_endpoints/${ep.id}`), shown, 'untouched')

      const read = { key: a.readKey }
      const denied = (res: Awaited<ReturnType<TestAccount['request']>>) => assertError(res, 403, 'permission_error', 'insufficient_scope')
      denied(await a.request('POST', '/webhook_endpoints', { url: 'https://8.8.8.8/x', events: ['*'] }, read))
      denied(await a.request('PUT', `/webhook_endpoints/${ep.id}`, { enabled: false }, read))
      denied(await a.request('DELETE', `/webhook_endpoints/${ep.id}`, undefined, read))
      const got = await a.request('GET', `/webhook_endpoints/${ep.id}`, undefined, read)
      assert.equal(got.status, 200, got.raw)
      assert.deepEqual(got.body.data, shown)
      assert.equal((await a.request('GET', '/webhook_endpoints', undefined, read)).body.meta.total, 1)
      assert.equal((await a.request('GET', `/webhook_endpoints/${ep.id}/deliveries`, undefined, read)).status, 200)
      assert.deepEqual(await getData(a, `/webhook_endpoints/${ep.id}`), shown, 'nothing changed')
    })

    // ---------------------------------------------------------------- SSRF

    test('private, loopback, link-local and multicast URLs are refused on POST and PUT by default (400 url)', async () => {
      const a = await strict.account()
      const ep = await (async () => {
        const res = await a.request('POST', '/webhook_endpoints', { url: 'https://8.8.8.8/hooks', events: ['*'] })
        assert.equal(res.status, 201, res.raw)
        return res.body.data
      })()
      const v6 = await a.request('POST', '/webhook_endpoints', { url: 'https://[2001:4860:4860::8888]/hooks', events: ['*'] })
      assert.equal(v6.status, 201, `a public IPv6 literal is accepted: ${v6.raw}`)

      for (const url of [...PRIVATE_URLS, ...MALFORMED_URLS]) {
        const created = await a.request('POST', '/webhook_endpoints', { url, events: ['*'] })
        assert.doesNotThrow(() => assertInvalid(created, 'url'), `POST ${url}: ${created.raw}`)
        const updated = await a.request('PUT', `/webhook_endpoints/${ep.id}`, { url })
        assert.doesNotThrow(() => assertInvalid(updated, 'url'), `PUT ${url}: ${updated.raw}`)
      }
      const list = await a.request('GET', '/webhook_endpoints')
      assert.equal(list.body.meta.total, 2, 'nothing private was saved')
      const after = await a.request('GET', `/webhook_endpoints/${ep.id}`)
      assert.equal(after.body.data.url, 'https://8.8.8.8/hooks', 'no PUT went through')
    })

    test('WEBHOOK_ALLOW_PRIVATE=true accepts a loopback URL, still refuses non-http(s) and credentials', async () => {
      const a = await t.account()
      for (const url of ['http://127.0.0.1:9/hooks', 'http://localhost:9/hooks', 'http://10.0.0.5/hooks']) {
        const res = await a.request('POST', '/webhook_endpoints', { url, events: ['payment.refunded'] })
        assert.equal(res.status, 201, `${url}: ${res.raw}`)
      }
      for (const url of MALFORMED_URLS) {
        const res = await a.request('POST', '/webhook_endpoints', { url, events: ['*'] })
        assert.doesNotThrow(() => assertInvalid(res, 'url'), `${url}: ${res.raw}`)
      }
    })

    test('delivery re-checks the target: a private endpoint saved earlier is never reached by a runner that forbids it', async () => {
      const a = await t.account()
      const r = await receiver()
      const literal = await endpointFor(a, r)
      const named = await createEndpoint(a, { url: `http://localhost:${r.port}/hooks`, events: ['*'] })
      await createWish(a, { query: 'kettle' })
      const [event] = await accountEvents(a)

      const runner = createBackgroundWork({
        db: t.store.db, clock: t.clock, config: { webhookAllowPrivate: false, webhookRetryScale: 0.001 }, logger: silent, payments: t.services.payments,
      })
      try {
        while (await runner.runOnce()) { /* more */ }
        t.clock.advance(1000)
        while (await runner.runOnce()) { /* the retry is refused too */ }
      } finally {
        await runner.stop()
      }
      assert.deepEqual(r.deliveries, [], 'the receiver was never reached')
      for (const ep of [literal, named]) {
        const log = await attempts(a, ep.id)
        assert.equal(log.meta.total, 2, `${ep.url}: two refused attempts`)
        for (const [i, attempt] of log.data.entries()) {
          assert.equal(attempt.attempt, 2 - i)
          assert.equal(attempt.event_id, event.id)
          assert.equal(attempt.status_code, null)
          assert.equal(attempt.succeeded, false)
          assert.equal(typeof attempt.error, 'string', `${ep.url}: the attempt says why`)
          assert.ok(attempt.error.length > 0)
        }
      }
    })

    // ---------------------------------------------------------------- delivery

    test('delivery: signed per Standard Webhooks v1; webhook-id is the event id; the body is GET /events/:id', async () => {
      const a = await t.account()
      const r = await receiver()
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

      const log = await attempts(a, ep.id)
      assert.deepEqual(log.meta, { total: 1, limit: 10, offset: 0 })
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
      assert.equal((await attempts(a, ep.id)).meta.total, 3)
    })

    test('a failed delivery (500) is retried on the backoff schedule until it succeeds', async () => {
      const a = await t.account()
      const r = await receiver({ respond: (_, n) => ({ status: n < 2 ? 500 : 200 }) })
      const ep = await endpointFor(a, r, ['wish.created'])
      await createWish(a, { query: 'retry me' })
      const [event] = await accountEvents(a)

      await drain()
      assert.deepEqual(r.deliveries.map((d) => d.answered), [500])
      let log = await attempts(a, ep.id)
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
      log = await attempts(a, ep.id)
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
      log = await attempts(a, ep.id)
      assert.deepEqual(log.meta, { total: 3, limit: 10, offset: 0 })
      assert.deepEqual(log.data.map((x: any) => [x.attempt, x.status_code, x.succeeded]), [[3, 200, true], [2, 500, false], [1, 500, false]], 'newest first')
      assert.deepEqual(ids(log.data), ids(newestFirst(log.data)))
      assert.equal(log.data[0].error, null)
      assert.equal(log.data[0].next_retry_at, null)
      assert.deepEqual(log.data.map((x: any) => x.event_id), [event.id, event.id, event.id])
      assert.deepEqual(r.ids(), [event.id, event.id, event.id], 'every retry carries the same webhook-id')
      assert.equal(new Set(r.deliveries.map((d) => d.body)).size, 1, 'and the same body')
      await assertAuthentic(a, r)
      assert.deepEqual(ids((await attempts(a, ep.id, '?limit=1&offset=1')).data), [log.data[1].id])

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
      const r = await receiver({ respond: (_, n) => answers[n] ?? { status: 200 } })
      const ep = await endpointFor(a, r)
      await createWish(a, { query: 'slow down' })

      await drain()
      let [latest] = (await attempts(a, ep.id)).data
      assert.deepEqual([latest.attempt, latest.status_code, latest.succeeded], [1, 429, false])
      assert.equal(retryWait(latest), 7000, 'Retry-After: 7')
      t.clock.advance(5000)
      await drain()
      assert.equal(r.deliveries.length, 1, 'not before Retry-After')
      t.clock.advance(2500)
      await drain()
      assert.equal(r.deliveries.length, 2)
      latest = (await attempts(a, ep.id)).data[0]
      assert.deepEqual([latest.attempt, latest.status_code, latest.succeeded], [2, 503, false])
      assert.equal(retryWait(latest), 3000, 'Retry-After: 3')
      t.clock.advance(2000)
      await drain()
      assert.equal(r.deliveries.length, 2, 'not before Retry-After')
      t.clock.advance(1500)
      await drain()
      assert.deepEqual(r.deliveries.map((d) => d.answered), [429, 503, 204])
      const log = await attempts(a, ep.id)
      assert.deepEqual(log.data.map((x: any) => [x.attempt, x.status_code, x.succeeded, x.next_retry_at === null]), [
        [3, 204, true, true], [2, 503, false, false], [1, 429, false, false],
      ])
      await assertAuthentic(a, r)
    })

    test('410 Gone disables the endpoint: no retry, no more deliveries until it is enabled again', async () => {
      const a = await t.account()
      let status = 410
      const r = await receiver({ respond: () => ({ status }) })
      const ep = await endpointFor(a, r)
      await createWish(a, { query: 'first' })
      await drain()
      assert.deepEqual(r.deliveries.map((d) => d.answered), [410])

      const [attempt] = (await attempts(a, ep.id)).data
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

      const [failed] = (await attempts(a, ep.id)).data
      assert.deepEqual([failed.attempt, failed.event_id, failed.status_code, failed.succeeded], [1, event.id, null, false])
      assert.equal(typeof failed.error, 'string')
      assert.match(failed.error, /ECONNREFUSED|refused/i)
      const wait = retryWait(failed)
      assert.ok(wait >= 4 && wait <= 6, `${wait} ms`)

      const r = await receiver({ port })
      r.secret = ep.secret
      t.clock.advance(1000)
      await drain()
      assert.deepEqual(r.ids(), [event.id])
      await assertAuthentic(a, r)
      const log = await attempts(a, ep.id)
      assert.deepEqual(log.data.map((x: any) => [x.attempt, x.status_code, x.succeeded, x.error]), [[2, 200, true, null], [1, null, false, failed.error]])
    })

    test('event-type filtering: each endpoint gets what it subscribed to; disabled and deleted ones get nothing', async () => {
      const a = await t.account()
      const b = await t.account()
      const rOnly = await receiver()
      const rAll = await receiver()
      const rSome = await receiver()
      const rDisabled = await receiver()
      const rDeleted = await receiver()
      const rOff = await receiver()
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
      assert.equal((await attempts(a, disabled.id)).meta.total, 0, 'a dropped delivery is no attempt')
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
