import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startAppWithClosedDatabase, startTestApp, type TestApp } from '../helpers/app.js'
import { storeKinds } from '../helpers/stores.js'

const API_VERSION = '2026-11-01.beta'


function parse(payload: string): any {
  return JSON.parse(payload)
}

for (const kind of storeKinds()) {
  describe(`health (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    test('GET /healthz is 200 without authentication', async () => {
      const res = await t.inject({ method: 'GET', url: '/healthz' })
      assert.equal(res.status, 200)
      assert.deepEqual(res.body, { status: 'ok' })
      assert.match(String(res.headers['request-id']), /^req_/)
      assert.equal(res.headers['api-version'], API_VERSION)
    })

    test('GET /readyz is 200 without authentication when the database answers', async () => {
      const res = await t.inject({ method: 'GET', url: '/readyz' })
      assert.equal(res.status, 200)
      assert.deepEqual(res.body, { status: 'ok' })
      assert.match(String(res.headers['request-id']), /^req_/)
      assert.equal(res.headers['api-version'], API_VERSION)
    })

    test('health routes ignore a bad Authorization header', async () => {
      for (const url of ['/healthz', '/readyz']) {
        const res = await t.inject({ method: 'GET', url, headers: { authorization: 'Bearer sk_nonsense' } })
        assert.equal(res.status, 200)
      }
    })
  })

  // Its own suite, after the one above has closed its store.
  describe(`health with the database closed (${kind.name})`, () => {
    test('GET /readyz is 503 service_unavailable with Retry-After; /healthz stays 200', async () => {
      const closed = await startAppWithClosedDatabase(kind)
      try {
        const ready = await closed.app.inject({ method: 'GET', url: '/readyz' })
        assert.equal(ready.statusCode, 503, ready.payload)
        const body = parse(ready.payload)
        assert.equal(body.error.type, 'api_error')
        assert.equal(body.error.code, 'service_unavailable')
        assert.equal(body.error.request_id, ready.headers['request-id'])
        assert.match(String(ready.headers['request-id']), /^req_/)
        assert.equal(ready.headers['api-version'], API_VERSION)
        assert.match(String(ready.headers['retry-after']), /^[1-9]\d*$/)
        for (const leak of [/destroy/i, /driver/i, /pool/i, /sqlite/i, /postgres/i, /kysely/i, /\bat .+:\d+/]) {
          assert.doesNotMatch(ready.payload, leak)
        }

        const live = await closed.app.inject({ method: 'GET', url: '/healthz' })
        assert.equal(live.statusCode, 200)
        assert.deepEqual(parse(live.payload), { status: 'ok' })
      } finally {
        await closed.close()
      }
    })
  })
}
