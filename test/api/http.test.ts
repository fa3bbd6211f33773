import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { randomBase62 } from '../../src/lib/ids.js'
import { createAccountService, KEY_CACHE_TTL_MS } from '../../src/modules/accounts/service.js'
import { startAppWithClosedDatabase, startTestApp, toResponse, type Response, type TestApp } from '../helpers/app.js'
import { assertEnvelopeHeaders, assertError } from '../helpers/assertions.js'
import { storeKinds } from '../helpers/stores.js'

const MIB = 1024 * 1024

/** The secret never comes back, neither in the body nor in a header. */
function assertNotEchoed(res: Response, secret: string): void {
  assert.ok(!res.raw.includes(secret), 'the key is echoed in the body')
  assert.ok(!JSON.stringify(res.headers).includes(secret), 'the key is echoed in a header')
}

function assertPrototypeClean(): void {
  assert.equal(({} as Record<string, unknown>).polluted, undefined)
  assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false)
}



for (const kind of storeKinds()) {
  describe(`http foundation (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    describe('Request-Id and API-Version', () => {
      test('every kind of response carries both headers, with a fresh req_ id each time', async () => {
        const a = await t.account()
        const responses: Response[] = []
        const created = await a.request('POST', '/wishes', { query: 'a kettle' })
        assert.equal(created.status, 201)
        responses.push(created)
        const read = await a.request('GET', `/wishes/${created.body.data.id}`)
        assert.equal(read.status, 200)
        responses.push(read)
        const list = await a.request('GET', '/wishes')
        assert.equal(list.status, 200)
        responses.push(list)
        const invalid = await a.request('POST', '/wishes', { query: 42 })
        assertError(invalid, 400, 'invalid_request_error', 'parameter_invalid')
        responses.push(invalid)
        const missing = await a.request('GET', '/wishes/wish_doesnotexist')
        assertError(missing, 404, 'invalid_request_error', 'resource_missing')
        responses.push(missing)
        const noRoute = await a.request('GET', '/no/such/route')
        assertError(noRoute, 404, 'invalid_request_error', 'route_not_found')
        responses.push(noRoute)
        const unauthenticated = await t.inject({ method: 'GET', url: '/wishes' })
        assertError(unauthenticated, 401, 'authentication_error', 'authentication_required')
        responses.push(unauthenticated)
        const forbidden = await a.request('POST', '/wishes', { query: 'x' }, { key: a.readKey })
        assertError(forbidden, 403, 'permission_error', 'insufficient_scope')
        responses.push(forbidden)
        const media = await a.request('POST', '/wishes', 'query=x', { headers: { 'content-type': 'text/plain' } })
        assertError(media, 415, 'invalid_request_error', 'unsupported_media_type')
        responses.push(media)
        const deleted = await a.request('DELETE', `/wishes/${created.body.data.id}`)
        assert.equal(deleted.status, 204)
        responses.push(deleted)
        const health = await t.inject({ method: 'GET', url: '/healthz' })
        assert.equal(health.status, 200)
        responses.push(health)

        const ids = responses.map(assertEnvelopeHeaders)
        assert.equal(new Set(ids).size, ids.length, 'Request-Id repeats')
      })

      test('a Request-Id sent by the client is not adopted', async () => {
        const a = await t.account()
        const res = await a.request('GET', '/wishes', undefined, { headers: { 'request-id': 'req_chosen_by_client' } })
        assert.equal(res.status, 200)
        assert.notEqual(assertEnvelopeHeaders(res), 'req_chosen_by_client')
      })
    })

    describe('authentication', () => {
      test('no Authorization header: 401 authentication_required with WWW-Authenticate: Bearer', async () => {
        for (const [method, url] of [['GET', '/wishes'], ['POST', '/wishes'], ['GET', '/wishes/wish_x'], ['DELETE', '/wishes/wish_x']] as const) {
          const res = await t.inject({ method, url })
          assertError(res, 401, 'authentication_error', 'authentication_required')
          assert.match(String(res.headers['www-authenticate']), /^Bearer\b/)
        }
      })

      test('another scheme (Basic): 401 authentication_required with WWW-Authenticate: Bearer', async () => {
        const a = await t.account()
        for (const credentials of ['dXNlcjpwYXNz', Buffer.from(`${a.key}:`).toString('base64'), a.key]) {
          const res = await t.inject({ method: 'GET', url: '/wishes', headers: { authorization: `Basic ${credentials}` } })
          assertError(res, 401, 'authentication_error', 'authentication_required')
          assert.match(String(res.headers['www-authenticate']), /^Bearer\b/)
          assertNotEchoed(res, a.key)
        }
      })

      test('an unknown well-formed key: 401 invalid_api_key, not echoed', async () => {
        for (const key of [`sk_${randomBase62(40)}`, `rk_${randomBase62(40)}`, `ak_${randomBase62(128)}`]) {
          const res = await t.inject({ method: 'GET', url: '/wishes', headers: { authorization: `Bearer ${key}` } })
          assertError(res, 401, 'authentication_error', 'invalid_api_key')
          assertNotEchoed(res, key)
        }
      })

      test('a malformed key: 401 invalid_api_key, not echoed', async () => {
        const a = await t.account()
        const malformed = [
          'sk_short',
          `xk_${randomBase62(40)}`,
          `${a.key}!`,
          `${a.key.slice(0, 3)}${'-'.repeat(40)}`,
          a.key.toUpperCase(),
          `sk_${randomBase62(40)}_${randomBase62(8)}`,
          // Longer than any key: refused before it is hashed (accounts/service.ts).
          `sk_${randomBase62(129)}`,
          `sk_${'a'.repeat(8000)}`,
        ]
        for (const key of malformed) {
          const res = await t.inject({ method: 'GET', url: '/wishes', headers: { authorization: `Bearer ${key}` } })
          assertError(res, 401, 'authentication_error', 'invalid_api_key')
          assertNotEchoed(res, key)
        }
      })

      test('"Bearer" with no token: 401 invalid_api_key', async () => {
        for (const header of ['Bearer', 'Bearer ']) {
          const res = await t.inject({ method: 'GET', url: '/wishes', headers: { authorization: header } })
          assertError(res, 401, 'authentication_error', 'invalid_api_key')
        }
      })

      test('a key revoked by another process stops working within the 1 s key cache', async () => {
        const a = await t.account()
        assert.equal((await a.request('GET', '/wishes')).status, 200)
        const elsewhere = createAccountService({ db: t.store.db, clock: t.clock })
        assert.equal(await elsewhere.revokeKey(a.keyId), 'revoked')
        const revokedAt = Date.now()
        let res = await a.request('GET', '/wishes')
        while (res.status === 200 && Date.now() - revokedAt < KEY_CACHE_TTL_MS + 500) {
          await new Promise((resolve) => setTimeout(resolve, 50))
          res = await a.request('GET', '/wishes')
        }
        assertError(res, 401, 'authentication_error', 'invalid_api_key')
        assert.ok(Date.now() - revokedAt <= KEY_CACHE_TTL_MS + 500, 'revocation took effect within the cache lifetime')
      })

      test('a revoked key: 401 invalid_api_key at once when revoked through this process; other keys still work', async () => {
        const a = await t.account()
        assert.equal((await a.request('GET', '/wishes')).status, 200)
        const result = await t.services.accounts.revokeKey(a.keyId)
        assert.equal(result, 'revoked')
        for (const [method, url, body] of [['GET', '/wishes', undefined], ['POST', '/wishes', { query: 'x' }]] as const) {
          const res = await a.request(method, url, body)
          assertError(res, 401, 'authentication_error', 'invalid_api_key')
          assertNotEchoed(res, a.key)
        }
        assert.equal((await a.request('GET', '/wishes', undefined, { key: a.readKey })).status, 200)
      })

      test('a valid key is never echoed in successful or failed responses', async () => {
        const a = await t.account()
        const created = await a.request('POST', '/wishes', { query: 'a lamp', metadata: { note: 'x' } })
        assert.equal(created.status, 201)
        assertNotEchoed(created, a.key)
        assertNotEchoed(await a.request('GET', '/wishes'), a.key)
        assertNotEchoed(await a.request('GET', '/wishes', undefined, { key: a.readKey }), a.readKey)
        assertNotEchoed(await a.request('POST', '/wishes', { nope: 1 }), a.key)
        assertNotEchoed(await a.request('POST', '/wishes', { query: 'x' }, { key: a.readKey }), a.readKey)
      })
    })

    describe('scopes', () => {
      test('a read key (rk_) gets 403 insufficient_scope on POST, PUT and DELETE, and nothing changes', async () => {
        const a = await t.account()
        const created = await a.request('POST', '/wishes', { query: 'a chair' })
        assert.equal(created.status, 201)
        const id = created.body.data.id

        const post = await a.request('POST', '/wishes', { query: 'another chair' }, { key: a.readKey })
        assertError(post, 403, 'permission_error', 'insufficient_scope')
        const put = await a.request('PUT', `/wishes/${id}`, { query: 'changed' }, { key: a.readKey })
        assertError(put, 403, 'permission_error', 'insufficient_scope')
        const del = await a.request('DELETE', `/wishes/${id}`, undefined, { key: a.readKey })
        assertError(del, 403, 'permission_error', 'insufficient_scope')

        const after = await a.request('GET', `/wishes/${id}`)
        assert.equal(after.status, 200)
        assert.deepEqual(after.body.data, created.body.data)
        const list = await a.request('GET', '/wishes')
        assert.equal(list.body.meta.total, 1)
      })

      test('a read key works for GET', async () => {
        const a = await t.account()
        const created = await a.request('POST', '/wishes', { query: 'a desk' })
        assert.equal(created.status, 201)
        const one = await a.request('GET', `/wishes/${created.body.data.id}`, undefined, { key: a.readKey })
        assert.equal(one.status, 200)
        assert.deepEqual(one.body.data, created.body.data)
        const list = await a.request('GET', '/wishes', undefined, { key: a.readKey })
        assert.equal(list.status, 200)
        assert.equal(list.body.meta.total, 1)
        assert.equal(list.body.data[0].id, created.body.data.id)
      })
    })

    describe('unknown routes', () => {
      test('an unknown path is 404 route_not_found, authenticated or not', async () => {
        const a = await t.account()
        for (const url of ['/nope', '/wishes/x/y', '/v1/wishes', '/payments_typo']) {
          assertError(await a.request('GET', url), 404, 'invalid_request_error', 'route_not_found')
          assertError(await a.request('POST', url, { query: 'x' }), 404, 'invalid_request_error', 'route_not_found')
          assertError(await t.inject({ method: 'GET', url }), 404, 'invalid_request_error', 'route_not_found')
        }
      })

      test('an unknown method on a known path is 404 route_not_found', async () => {
        const a = await t.account()
        const created = await a.request('POST', '/wishes', { query: 'a mug' })
        assert.equal(created.status, 201)
        const cases = [['PATCH', `/wishes/${created.body.data.id}`], ['POST', `/wishes/${created.body.data.id}`], ['DELETE', '/wishes'], ['PUT', '/wishes'], ['PATCH', '/wishes']] as const
        for (const [method, url] of cases) {
          assertError(await a.request(method, url, { query: 'x' }), 404, 'invalid_request_error', 'route_not_found')
          assertError(await t.inject({ method, url }), 404, 'invalid_request_error', 'route_not_found')
        }
        const still = await a.request('GET', `/wishes/${created.body.data.id}`)
        assert.deepEqual(still.body.data, created.body.data)
      })
    })

    describe('request bodies', () => {
      test('text/plain and form bodies are 415 unsupported_media_type', async () => {
        const a = await t.account()
        const created = await a.request('POST', '/wishes', { query: 'a pen' })
        assert.equal(created.status, 201)
        const bodies: [string, string][] = [
          ['text/plain', '{"query":"a pen"}'],
          ['text/plain; charset=utf-8', '{"query":"a pen"}'],
          ['application/x-www-form-urlencoded', 'query=a+pen'],
          ['multipart/form-data; boundary=xyz', '--xyz\r\nContent-Disposition: form-data; name="query"\r\n\r\na pen\r\n--xyz--\r\n'],
        ]
        for (const [contentType, payload] of bodies) {
          assertError(await a.request('POST', '/wishes', payload, { headers: { 'content-type': contentType } }),
            415, 'invalid_request_error', 'unsupported_media_type')
          assertError(await a.request('PUT', `/wishes/${created.body.data.id}`, payload, { headers: { 'content-type': contentType } }),
            415, 'invalid_request_error', 'unsupported_media_type')
        }
        assert.equal((await a.request('GET', '/wishes')).body.meta.total, 1)
      })

      test('malformed JSON is 400 invalid_json', async () => {
        const a = await t.account()
        for (const payload of ['{"query":', '{query: "x"}', "{'query':'x'}", '{"query":"x",}', 'nul']) {
          assertError(await a.request('POST', '/wishes', payload), 400, 'invalid_request_error', 'invalid_json')
        }
      })

      test('an empty body with Content-Type application/json counts as no body', async () => {
        const a = await t.account()
        const res = await a.request('POST', '/wishes', '', { headers: { 'content-type': 'application/json' } })
        assertError(res, 400, 'invalid_request_error', 'parameter_missing')
        assert.equal(res.body.error.param, 'query')
        const wish = await a.request('POST', '/wishes', { query: 'a rug' })
        const deleted = await a.request('DELETE', `/wishes/${wish.body.data.id}`, undefined, { headers: { 'content-type': 'application/json' } })
        assert.equal(deleted.status, 204)
      })

      test('a POST with no body and no Content-Type is validated as {}', async () => {
        const a = await t.account()
        const res = await a.request('POST', '/wishes')
        assertError(res, 400, 'invalid_request_error', 'parameter_missing')
        assert.equal(res.body.error.param, 'query')
        assert.ok(res.body.error.errors.some((e: any) => e.param === 'query' && e.code === 'parameter_missing'))
      })

      test('a body just over 1 MiB is 413 payload_too_large; just under is not', async () => {
        const a = await t.account()
        const shell = '{"query":"x","category":""}'
        const bodyOf = (size: number) => `{"query":"x","category":"${'a'.repeat(size - shell.length)}"}`
        const over = bodyOf(MIB + 1)
        assert.equal(Buffer.byteLength(over), MIB + 1)
        assertError(await a.request('POST', '/wishes', over), 413, 'invalid_request_error', 'payload_too_large')

        const under = bodyOf(MIB - 16)
        assert.equal(Buffer.byteLength(under), MIB - 16)
        const res = await a.request('POST', '/wishes', under)
        assert.notEqual(res.status, 413)
        // Read whole and validated: category is over 100 characters.
        assertError(res, 400, 'invalid_request_error', 'parameter_invalid')
        assert.equal(res.body.error.param, 'category')
      })

      test('unknown members are rejected with 400 parameter_unknown, not stripped', async () => {
        const a = await t.account()
        const top = await a.request('POST', '/wishes', { query: 'a bike', account_id: 'acct_someone_else' })
        assertError(top, 400, 'invalid_request_error', 'parameter_unknown')
        assert.equal(top.body.error.param, 'account_id')

        const nested = await a.request('POST', '/wishes', { query: 'a bike', budget: { max: 10, currency: 'USD', owner: 'x' } })
        assertError(nested, 400, 'invalid_request_error', 'parameter_unknown')
        assert.equal(nested.body.error.param, 'budget.owner')

        const both = await a.request('POST', '/wishes', { query: 'a bike', id: 'wish_mine', status: 'fulfilled' })
        assertError(both, 400, 'invalid_request_error', 'parameter_unknown')
        const params = both.body.error.errors.map((e: any) => e.param).sort()
        assert.deepEqual(params, ['id', 'status'])
        assert.equal((await a.request('GET', '/wishes')).body.meta.total, 0)

        const created = await a.request('POST', '/wishes', { query: 'a bike' })
        assert.equal(created.status, 201)
        const put = await a.request('PUT', `/wishes/${created.body.data.id}`, { query: 'a red bike', created_at: '2020-01-01T00:00:00.000Z' })
        assertError(put, 400, 'invalid_request_error', 'parameter_unknown')
        assert.equal(put.body.error.param, 'created_at')
        assert.deepEqual((await a.request('GET', `/wishes/${created.body.data.id}`)).body.data, created.body.data)

        const query = await a.request('GET', '/wishes?limit=5&owner=me')
        assertError(query, 400, 'invalid_request_error', 'parameter_unknown')
        assert.equal(query.body.error.param, 'owner')
      })
    })

    describe('prototype pollution', () => {
      test('bodies with __proto__ or constructor.prototype are refused with 400', async () => {
        const a = await t.account()
        const created = await a.request('POST', '/wishes', { query: 'a lamp' })
        assert.equal(created.status, 201)
        const payloads = [
          '{"query":"x","__proto__":{"polluted":"yes"}}',
          '{"__proto__":{"polluted":"yes"},"query":"x"}',
          '{"query":"x","metadata":{"__proto__":{"polluted":"yes"}}}',
          '{"query":"x","constructor":{"prototype":{"polluted":"yes"}}}',
          '{"query":"x","metadata":{"constructor":{"prototype":{"polluted":"yes"}}}}',
        ]
        for (const payload of payloads) {
          for (const [method, url] of [['POST', '/wishes'], ['PUT', `/wishes/${created.body.data.id}`]] as const) {
            const res = await a.request(method, url, payload)
            assert.equal(res.status, 400, `${method} ${payload}: ${res.status} ${res.raw.slice(0, 200)}`)
            assert.equal(res.body.error.type, 'invalid_request_error')
            // Refused as JSON the API will not read, or as an unknown member: either is a contract 400 code.
            assert.ok(['invalid_json', 'parameter_unknown'].includes(res.body.error.code), res.body.error.code)
            assertEnvelopeHeaders(res)
            assertPrototypeClean()
          }
        }
        assert.equal((await a.request('GET', '/wishes')).body.meta.total, 1)
        assert.deepEqual((await a.request('GET', `/wishes/${created.body.data.id}`)).body.data, created.body.data)
        assertPrototypeClean()
      })

      test('metadata keys named constructor, toString, hasOwnProperty are plain data', async () => {
        const a = await t.account()
        const metadata = { constructor: 'c', toString: 't', hasOwnProperty: 'h', valueOf: 'v', isPrototypeOf: 'i' }
        const created = await a.request('POST', '/wishes', { query: 'a rug', metadata })
        assert.equal(created.status, 201, created.raw)
        assert.deepEqual(created.body.data.metadata, metadata)
        const read = await a.request('GET', `/wishes/${created.body.data.id}`)
        assert.equal(read.status, 200)
        assert.deepEqual(read.body.data.metadata, metadata)
        assert.ok(read.raw.includes('"constructor":"c"'))

        const updated = await a.request('PUT', `/wishes/${created.body.data.id}`, { metadata: { toString: null, propertyIsEnumerable: 'p', constructor: 'c2' } })
        assert.equal(updated.status, 200, updated.raw)
        assert.deepEqual(updated.body.data.metadata, { constructor: 'c2', hasOwnProperty: 'h', valueOf: 'v', isPrototypeOf: 'i', propertyIsEnumerable: 'p' })
        const reread = await a.request('GET', `/wishes/${created.body.data.id}`)
        assert.deepEqual(reread.body.data.metadata, updated.body.data.metadata)

        const list = await a.request('GET', '/wishes')
        assert.deepEqual(list.body.data[0].metadata, updated.body.data.metadata)
        assertPrototypeClean()
      })
    })

    describe('types', () => {
      test('JSON bodies are not coerced: a number where a string is expected is 400', async () => {
        const a = await t.account()
        const query = await a.request('POST', '/wishes', { query: 123 })
        assertError(query, 400, 'invalid_request_error', 'parameter_invalid')
        assert.equal(query.body.error.param, 'query')

        const category = await a.request('POST', '/wishes', { query: 'x', category: 5 })
        assertError(category, 400, 'invalid_request_error', 'parameter_invalid')
        assert.equal(category.body.error.param, 'category')

        const max = await a.request('POST', '/wishes', { query: 'x', budget: { max: '100' } })
        assertError(max, 400, 'invalid_request_error', 'parameter_invalid')
        assert.equal(max.body.error.param, 'budget.max')

        const bool = await a.request('POST', '/wishes', { query: true })
        assertError(bool, 400, 'invalid_request_error', 'parameter_invalid')

        const created = await a.request('POST', '/wishes', { query: 'x' })
        assert.equal(created.status, 201)
        const put = await a.request('PUT', `/wishes/${created.body.data.id}`, { query: 7 })
        assertError(put, 400, 'invalid_request_error', 'parameter_invalid')
        assert.equal(put.body.error.param, 'query')
        assert.equal((await a.request('GET', '/wishes')).body.meta.total, 1)
      })

      test('query strings are coerced: limit=5 works, limit=abc is 400', async () => {
        const a = await t.account()
        for (let i = 0; i < 6; i++) assert.equal((await a.request('POST', '/wishes', { query: `thing ${i}` })).status, 201)
        const res = await a.request('GET', '/wishes?limit=5&offset=1')
        assert.equal(res.status, 200)
        assert.equal(res.body.data.length, 5)
        assert.deepEqual(res.body.meta, { total: 6, limit: 5, offset: 1, has_more: false })

        const bad = await a.request('GET', '/wishes?limit=abc')
        assertError(bad, 400, 'invalid_request_error', 'parameter_invalid')
        assert.equal(bad.body.error.param, 'limit')
      })
    })
  })

  // Its own suite, after the main one has closed its store: see startAppWithClosedDatabase.
  describe(`internal errors (${kind.name})`, () => {
    test('with the database closed, the answer is a 5xx api_error that hides internals', async () => {
      const closed = await startAppWithClosedDatabase(kind)
      try {
        const requests = [
          { method: 'GET' as const, url: '/wishes' },
          { method: 'GET' as const, url: '/wishes/wish_x' },
          { method: 'POST' as const, url: '/wishes', payload: JSON.stringify({ query: 'x' }), headers: { 'content-type': 'application/json' } },
        ]
        for (const r of requests) {
          const res = toResponse(await closed.app.inject({ ...r, headers: { ...r.headers, authorization: `Bearer ${closed.key}` } }))
          assert.ok(res.status === 500 || res.status === 503, `${r.method} ${r.url}: ${res.status} ${res.raw}`)
          assert.equal(res.body.error.type, 'api_error')
          if (res.status === 500) {
            assert.equal(res.body.error.code, 'internal_error')
          } else {
            assert.equal(res.body.error.code, 'service_unavailable')
            assert.match(String(res.headers['retry-after']), /^\d+$/)
          }
          assertEnvelopeHeaders(res)
          assert.deepEqual(Object.keys(res.body), ['error'])
          assert.deepEqual(Object.keys(res.body.error).sort(), ['code', 'message', 'request_id', 'type'])
          const message: string = res.body.error.message
          assert.ok(message.length > 0 && message.length < 200)
          for (const leak of [/stack/i, /\bat .+:\d+/, /destroy/i, /driver/i, /pool/i, /sqlite/i, /postgres/i, /\bpg\b/i, /kysely/i,
            /select|insert|update|from\s/i, /TypeError|Error:/, /node_modules/, /\/work\//, /ECONN/]) {
            assert.doesNotMatch(res.raw, leak)
          }
          assertNotEchoed(res, closed.key)
        }
      } finally {
        await closed.close()
      }
    })
  })
}
