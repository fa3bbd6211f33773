import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startAppWithClosedDatabase, startTestApp, type TestApp, toResponse } from '../helpers/app.js'
import { assertEnvelopeHeaders, assertError } from '../helpers/assertions.js'
import { storeKinds } from '../helpers/stores.js'

for (const kind of storeKinds()) {
  describe(`health (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    test('GET /healthz is 200 without authentication', async () => {
      const res = await t.inject({ method: 'GET', url: '/healthz' })
      assert.equal(res.status, 200)
      assert.deepEqual(res.body, { status: 'ok' })
      assertEnvelopeHeaders(res)
    })

    test('GET /readyz is 200 without authentication when the database answers', async () => {
      const res = await t.inject({ method: 'GET', url: '/readyz' })
      assert.equal(res.status, 200)
      assert.deepEqual(res.body, { status: 'ok' })
      assertEnvelopeHeaders(res)
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
        const ready = toResponse(await closed.app.inject({ method: 'GET', url: '/readyz' }))
        assertError(ready, 503, 'api_error', 'service_unavailable')
        assert.match(String(ready.headers['retry-after']), /^[1-9]\d*$/)
        for (const leak of [/destroy/i, /driver/i, /pool/i, /sqlite/i, /postgres/i, /kysely/i, /\bat .+:\d+/]) {
          assert.doesNotMatch(ready.raw, leak)
        }

        const live = toResponse(await closed.app.inject({ method: 'GET', url: '/healthz' }))
        assert.equal(live.status, 200)
        assert.deepEqual(live.body, { status: 'ok' })
      } finally {
        await closed.close()
      }
    })
  })
}
