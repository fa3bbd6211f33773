import assert from 'node:assert/strict'
import { after, afterEach, before, describe, test } from 'node:test'
import { createBackgroundWork } from '../../src/jobs/index.js'
import { newId } from '../../src/lib/ids.js'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertError, assertInvalid, assertNotFound, ids, ISO_MS, newestFirst } from '../helpers/assertions.js'
import { createWish, getData, getList } from '../helpers/fixtures.js'
import { type Receiver } from '../helpers/receiver.js'
import { accountEvents, createEndpoint, endpointFor, listAttempts, receiverIn } from '../helpers/webhooks.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Webhook endpoints and their deliveries (contract section 7): the endpoints API, Standard Webhooks v1
 * signatures checked by a real receiver with the `standardwebhooks` package, retries with backoff,
 * Retry-After, 410 Gone, event-type filtering, and the refusal of private targets (SSRF) both when an
 * endpoint is saved and when it is delivered to. This file: the endpoints API and the refusal of
 * private targets on save; webhooks-delivery.test.ts has the deliveries.
 */

const ENDPOINT_ID = /^we_[0-9A-Za-z]{16,}$/
const SECRET = /^whsec_[A-Za-z0-9+/]{32}$/
const ENDPOINT_KEYS = ['created_at', 'description', 'disabled_reason', 'enabled', 'events', 'id', 'updated_at', 'url']
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
  describe(`webhooks: endpoints API and SSRF on save (${kind.name})`, () => {
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
      assert.deepEqual(listed.body, { data: [shown], meta: { total: 1, limit: 10, offset: 0, has_more: false } })
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
      assert.deepEqual(await getList(a, '/webhook_endpoints'), { data: [], meta: { total: 0, limit: 10, offset: 0, has_more: false } })
    })

    test('GET /webhook_endpoints: newest first, limit/offset', async () => {
      const a = await t.account()
      const made: string[] = []
      for (let i = 0; i < 4; i++) {
        made.push((await createEndpoint(a, { url: `https://8.8.8.8/hooks/${i}`, events: ['*'] })).id)
        if (i % 2 === 0) t.clock.advance(5)
      }
      const all = await getList(a, '/webhook_endpoints')
      assert.deepEqual(all.meta, { total: 4, limit: 10, offset: 0, has_more: false })
      assert.deepEqual(ids(all.data), [...made].reverse())
      assert.deepEqual(ids(all.data), ids(newestFirst(all.data)))
      const page = await getList(a, '/webhook_endpoints?limit=2&offset=1')
      assert.deepEqual(page.meta, { total: 4, limit: 2, offset: 1, has_more: true })
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
      assert.deepEqual(await getList(b, '/webhook_endpoints'), { data: [], meta: { total: 0, limit: 10, offset: 0, has_more: false } })
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
      const r = await receiverIn(receivers)
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
        const log = await listAttempts(a, ep.id)
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
  })
}
