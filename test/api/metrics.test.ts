import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { createMetrics } from '../../src/http/metrics.js'
import { createBackgroundWork } from '../../src/jobs/index.js'
import { randomBase62 } from '../../src/lib/ids.js'
import { createServices } from '../../src/services.js'
import { type Response, startTestApp, type TestApp, toResponse } from '../helpers/app.js'
import { assertError } from '../helpers/assertions.js'
import { TestClock } from '../helpers/clock.js'
import { createMandate, createSucceededPayment, createWish } from '../helpers/fixtures.js'
import { type Receiver, startReceiver } from '../helpers/receiver.js'
import { storeKinds, type TestStore } from '../helpers/stores.js'

/**
 * GET /metrics (contract section 8): Prometheus text with request latencies by route, method and
 * status, payments by status, the job queue, the database pool and its shared commits; open unless METRICS_TOKEN is set;
 * webhook delivery outcomes counted by the job runner that shares the app's Metrics.
 */

/** One sample of the exposition text: its name, labels and value. */
interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

function parseSamples(text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    assert.ok(match, `a well-formed sample line: ${JSON.stringify(line)}`)
    const labels: Record<string, string> = {}
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!
    samples.push({ name: match[1]!, labels, value: Number(match[3]) })
  }
  return samples
}

/** The samples named `name` whose labels include `labels`. */
function find(samples: Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
}

/** The single sample named `name` with exactly these labels (plus none other). */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((s) => s.name === name && Object.keys(s.labels).length === Object.keys(labels).length
    && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  assert.ok(found.length <= 1, `one ${name} sample with ${JSON.stringify(labels)}`)
  return found[0]?.value
}

function assertPrometheusText(res: Response): Sample[] {
  assert.equal(res.status, 200, res.raw)
  assert.match(String(res.headers['content-type']), /^text\/plain/, 'Prometheus text content type')
  assert.match(String(res.headers['content-type']), /version=0\.0\.4/)
  return parseSamples(res.raw)
}

/** A 401 of /metrics asks for the METRICS_TOKEN bearer token, not for an API key it would refuse. */
function assertAsksForMetricsToken(res: Response): void {
  assert.equal(res.body.error.code, 'authentication_required', res.raw)
  assert.match(res.body.error.message, /METRICS_TOKEN bearer token/)
  assert.match(res.body.error.message, /"Authorization: Bearer <METRICS_TOKEN>"/)
  assert.doesNotMatch(res.body.error.message, /send your API key/)
  assert.match(String(res.headers['www-authenticate']), /^Bearer realm="wishpay-metrics"$/)
}

for (const kind of storeKinds()) {
  describe(`GET /metrics, open (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t?.close() })

    test('without authentication it is 200 Prometheus text with every documented metric', async () => {
      const a = await t.account()
      await createWish(a, { query: 'metrics' })
      const mandate = await createMandate(t, a, { usage: 'multi_use', budget_amount: 10_000 })
      await createSucceededPayment(a, mandate.id, 100)
      await createSucceededPayment(a, mandate.id, 200)
      const missing = await a.request('GET', '/wishes/wish_doesnotexist')
      assert.equal(missing.status, 404)

      const res = await t.inject({ method: 'GET', url: '/metrics' })
      const samples = assertPrometheusText(res)
      for (const name of ['wishpay_http_request_duration_seconds', 'wishpay_payments', 'wishpay_job_queue_depth',
        'wishpay_job_queue_lag_seconds', 'wishpay_db_pool_connections', 'wishpay_webhook_deliveries_total',
        'wishpay_db_commit_writes', 'wishpay_db_commit_seconds']) {
        assert.match(res.raw, new RegExp(`^# TYPE ${name} `, 'm'), `${name} is exposed`)
      }
      assert.match(res.raw, /^# TYPE wishpay_http_request_duration_seconds histogram$/m)

      // Request latencies by route template (not the raw URL), method and status.
      const posted = find(samples, 'wishpay_http_request_duration_seconds_count', { route: '/wishes', method: 'POST', status_code: '201' })
      assert.equal(posted.length, 1, res.raw)
      assert.equal(posted[0]!.value, 1, 'one POST /wishes 201')
      const payments = find(samples, 'wishpay_http_request_duration_seconds_count', { route: '/payments', method: 'POST', status_code: '201' })
      assert.equal(payments[0]?.value, 2, 'two POST /payments 201')
      const notFound = find(samples, 'wishpay_http_request_duration_seconds_count', { method: 'GET', status_code: '404' })
      assert.ok(notFound.some((s) => s.labels.route === '/wishes/:id' && s.value === 1), `GET /wishes/:id 404 by its template: ${JSON.stringify(notFound)}`)
      assert.ok(!samples.some((s) => s.labels.route?.includes('wish_doesnotexist')), 'ids never become label values')
      const buckets = find(samples, 'wishpay_http_request_duration_seconds_bucket', { route: '/wishes', method: 'POST', status_code: '201' })
      assert.ok(buckets.length > 1 && buckets.some((b) => b.labels.le === '+Inf' && b.value === 1), 'histogram buckets up to +Inf')
      assert.ok((find(samples, 'wishpay_http_request_duration_seconds_sum', { route: '/payments', method: 'POST' })[0]?.value ?? -1) > 0)

      // Payments by status, read from the store: both payments of this new store.
      assert.equal(valueOf(samples, 'wishpay_payments', { status: 'succeeded' }), 2)
      const depth = valueOf(samples, 'wishpay_job_queue_depth')
      assert.ok(depth !== undefined && Number.isInteger(depth) && depth >= 0, `queue depth ${depth}`)
      const lag = valueOf(samples, 'wishpay_job_queue_lag_seconds')
      assert.ok(lag !== undefined && lag >= 0, `queue lag ${lag}`)
      for (const state of ['total', 'idle', 'waiting']) {
        const n = valueOf(samples, 'wishpay_db_pool_connections', { state })
        assert.ok(n !== undefined && Number.isInteger(n) && n >= 0, `pool ${state}: ${n}`)
      }
    })

    test('payments by status follow the store', async () => {
      const a = await t.account()
      const mandate = await createMandate(t, a, { usage: 'multi_use', budget_amount: 10_000 })
      const before = valueOf(parseSamples((await t.inject({ method: 'GET', url: '/metrics' })).raw), 'wishpay_payments', { status: 'succeeded' }) ?? 0
      await createSucceededPayment(a, mandate.id, 300, randomUUID())
      const afterwards = valueOf(parseSamples((await t.inject({ method: 'GET', url: '/metrics' })).raw), 'wishpay_payments', { status: 'succeeded' })
      assert.equal(afterwards, before + 1)
    })

    test('shared commits: every write that shared one is counted once, with the commit\'s time', async () => {
      const a = await t.account()
      const mandate = await createMandate(t, a, { usage: 'multi_use', budget_amount: 100_000 })
      const scrape = async () => parseSamples((await t.inject({ method: 'GET', url: '/metrics' })).raw)
      const writes = (samples: Sample[], part: 'sum' | 'count') => valueOf(samples, `wishpay_db_commit_writes_${part}`) ?? 0
      // SQLite commits every write in a durable batch, which counts the members it committed.
      const committedMembers = () => t.store.db.sqlite?.batch.committedMembers ?? 0
      const before = await scrape()
      const membersBefore = committedMembers()
      const startedAt = performance.now()
      const paid = await Promise.all(Array.from({ length: 16 }, () => createSucceededPayment(a, mandate.id, 10)))
      const wallSeconds = (performance.now() - startedAt) / 1000
      assert.equal(paid.length, 16)
      const after = await scrape()

      const written = writes(after, 'sum') - writes(before, 'sum')
      const commits = writes(after, 'count') - writes(before, 'count')
      // PostgreSQL's statement batches carry the payments (and wishes) only; SQLite's batches every write.
      if (kind.name === 'postgres') assert.equal(written, 16, 'each payment counted once')
      else assert.equal(written, committedMembers() - membersBefore, 'each committed write counted once')
      assert.ok(commits >= 1 && commits <= written, `${commits} commits for ${written} writes`)
      assert.equal(valueOf(after, 'wishpay_db_commit_writes_bucket', { le: '+Inf' }), writes(after, 'count'))
      assert.equal(valueOf(after, 'wishpay_db_commit_seconds_count'), writes(after, 'count'), 'one time a commit')
      // In seconds: each commit of the payments lasted less than all of them together.
      const seconds = (valueOf(after, 'wishpay_db_commit_seconds_sum') ?? 0) - (valueOf(before, 'wishpay_db_commit_seconds_sum') ?? 0)
      assert.ok(seconds > 0 && seconds <= commits * wallSeconds, `${seconds} s over ${commits} commits in ${wallSeconds} s`)

      // A write on its own is a commit of one.
      const membersThen = committedMembers()
      await createSucceededPayment(a, mandate.id, 10)
      const alone = await scrape()
      if (kind.name === 'postgres') {
        assert.equal(writes(alone, 'sum') - writes(after, 'sum'), 1)
        assert.equal(writes(alone, 'count') - writes(after, 'count'), 1)
      } else {
        assert.equal(writes(alone, 'sum') - writes(after, 'sum'), committedMembers() - membersThen)
        assert.ok(writes(alone, 'count') > writes(after, 'count'))
      }
    })

    test('/metrics ignores a bearer header when no METRICS_TOKEN is set', async () => {
      const res = await t.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer whatever' } })
      assertPrometheusText(res)
    })
  })

  describe(`GET /metrics behind METRICS_TOKEN (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind, { METRICS_TOKEN: 'secret' }) })
    after(async () => { await t?.close() })

    test('no Authorization header is 401 authentication_error', async () => {
      const res = await t.inject({ method: 'GET', url: '/metrics' })
      assertError(res, 401, 'authentication_error', 'authentication_required')
      assert.doesNotMatch(res.raw, /wishpay_/)
      assertAsksForMetricsToken(res)
    })

    test('a wrong token, another scheme or an API key is 401', async () => {
      const a = await t.account()
      for (const authorization of ['Bearer wrong', 'Bearer secret2', 'Bearer  secret', 'Basic c2VjcmV0', 'secret', `Bearer ${a.key}`]) {
        const res = await t.inject({ method: 'GET', url: '/metrics', headers: { authorization } })
        assert.equal(res.status, 401, `${authorization}: ${res.raw}`)
        assert.equal(res.body?.error?.type, 'authentication_error', res.raw)
        assert.doesNotMatch(res.raw, /wishpay_/)
        assertAsksForMetricsToken(res)
        assert.match(res.body.error.message, /^The metrics token is not valid/)
      }
    })

    test('Authorization: Bearer secret is 200 Prometheus text', async () => {
      const res = await t.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer secret' } })
      const samples = assertPrometheusText(res)
      assert.ok(find(samples, 'wishpay_db_pool_connections').length > 0, res.raw)
    })

    test('the token guards only /metrics: health and API routes are as before', async () => {
      assert.equal((await t.inject({ method: 'GET', url: '/healthz' })).status, 200)
      const a = await t.account()
      assert.equal((await a.request('GET', '/wishes')).status, 200)
    })
  })
}

describe('webhook delivery outcomes in /metrics (sqlite)', () => {
  const kind = storeKinds()[0]!
  let store: TestStore | undefined
  let app: FastifyInstance | undefined
  let jobs: ReturnType<typeof createBackgroundWork> | undefined
  let receiver: Receiver | undefined
  let key = ''

  before(async () => {
    store = await kind.open()
    await migrateToLatest(store.db)
    const clock = new TestClock()
    const config = loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true', RATE_LIMIT_PER_SECOND: '1000000' })
    const services = createServices({ config, db: store.db, clock })
    // As the server does: one Metrics shared by the app and the job runner.
    const metrics = createMetrics({ db: store.db, clock })
    app = await buildApp({ config, db: store.db, clock, services, metrics })
    const silent = { info() {}, warn() {}, error() {} }
    jobs = createBackgroundWork({ db: store.db, clock, config, logger: silent, payments: services.payments, onDelivery: metrics.webhookDelivery })
    key = (await services.accounts.createKey(`metrics-${randomBase62(8)}`, 'write')).key
    // Answers by path: /ok 200, /gone 410, /fail 500.
    receiver = await startReceiver({ respond: (d) => ({ status: d.path === '/ok' ? 200 : d.path === '/gone' ? 410 : 500 }) })
  })

  after(async () => {
    await jobs?.stop()
    await app?.close()
    await receiver?.close()
    await store?.close()
  })

  const request = async (method: 'GET' | 'POST', url: string, body?: unknown) => toResponse(await app!.inject({
    method,
    url,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  }))

  test('delivered, retrying and disabled attempts are counted by outcome', async () => {
    const scrape = async () => parseSamples((await app!.inject({ method: 'GET', url: '/metrics' })).payload)
    const outcomes = ['delivered', 'retrying', 'disabled']
    for (const outcome of outcomes) {
      assert.equal(valueOf(await scrape(), 'wishpay_webhook_deliveries_total', { outcome }) ?? 0, 0, `no ${outcome} yet`)
    }

    for (const path of ['/ok', '/fail', '/gone']) {
      const res = await request('POST', '/webhook_endpoints', { url: `${receiver!.origin}${path}`, events: ['wish.created'] })
      assert.equal(res.status, 201, res.raw)
    }
    const wish = await request('POST', '/wishes', { query: 'count my deliveries' })
    assert.equal(wish.status, 201, wish.raw)

    // Each endpoint gets its first attempt.
    for (let i = 0; i < 10 && receiver!.deliveries.length < 3; i++) await jobs!.runOnce()
    assert.deepEqual(receiver!.deliveries.map((d) => d.path).sort(), ['/fail', '/gone', '/ok'])

    const samples = await scrape()
    assert.equal(valueOf(samples, 'wishpay_webhook_deliveries_total', { outcome: 'delivered' }), 1, 'the 200')
    assert.equal(valueOf(samples, 'wishpay_webhook_deliveries_total', { outcome: 'retrying' }), 1, 'the 500, retried later')
    assert.equal(valueOf(samples, 'wishpay_webhook_deliveries_total', { outcome: 'disabled' }), 1, 'the 410, endpoint disabled')
    assert.equal(valueOf(samples, 'wishpay_webhook_deliveries_total', { outcome: 'failed' }) ?? 0, 0)
    assert.match((await app!.inject({ method: 'GET', url: '/metrics' })).payload, /^# TYPE wishpay_webhook_deliveries_total counter$/m)
  })
})

describe('the app\'s metrics stop listening to the database when the app closes (sqlite)', () => {
  test('a write after app.close() is not counted', async () => {
    const store = await storeKinds()[0]!.open()
    try {
      await migrateToLatest(store.db)
      const clock = new TestClock()
      const config = loadConfig({ RATE_LIMIT_PER_SECOND: '1000000' })
      const metrics = createMetrics({ db: store.db, clock })
      const app = await buildApp({ config, db: store.db, clock, metrics })
      const services = createServices({ config, db: store.db, clock })
      const commits = async () => valueOf(parseSamples(await metrics.registry.metrics()), 'wishpay_db_commit_writes_count') ?? 0
      await services.accounts.createKey(`metrics-${randomBase62(8)}`, 'write')
      const whileOpen = await commits()
      assert.ok(whileOpen > 0, 'a write while the app is open is counted')
      await app.close()
      await services.accounts.createKey(`metrics-${randomBase62(8)}`, 'write')
      assert.equal(await commits(), whileOpen)
    } finally {
      await store.close()
    }
  })
})

describe('createMetrics on its own', () => {
  test('webhookDelivery(outcome) increments wishpay_webhook_deliveries_total{outcome}', async () => {
    const kind = storeKinds()[0]!
    const store = await kind.open()
    try {
      await migrateToLatest(store.db)
      const metrics = createMetrics({ db: store.db, clock: new TestClock() })
      metrics.webhookDelivery('delivered')
      metrics.webhookDelivery('delivered')
      metrics.webhookDelivery('failed')
      const samples = parseSamples(await metrics.registry.metrics())
      assert.equal(valueOf(samples, 'wishpay_webhook_deliveries_total', { outcome: 'delivered' }), 2)
      assert.equal(valueOf(samples, 'wishpay_webhook_deliveries_total', { outcome: 'failed' }), 1)
      assert.equal(valueOf(samples, 'wishpay_payments', { status: 'succeeded' }), undefined, 'no payments in a new store')
      // Two Metrics never share a registry (one per app, so tests and processes do not mix counts).
      const other = createMetrics({ db: store.db, clock: new TestClock() })
      assert.equal(valueOf(parseSamples(await other.registry.metrics()), 'wishpay_webhook_deliveries_total', { outcome: 'delivered' }), undefined)
      metrics.close()
      other.close()
    } finally {
      await store.close()
    }
  })
})
