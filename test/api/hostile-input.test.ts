import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Type } from '@sinclair/typebox'
import Fastify from 'fastify'
import { registerErrorHandling } from '../../src/http/error-handler.js'
import { registerRequestContext } from '../../src/http/request-context.js'
import { MAX_OFFSET } from '../../src/lib/paging.js'
import { registerTextGuard } from '../../src/http/text-guard.js'
import { registerValidators } from '../../src/http/validation.js'
import { newId } from '../../src/lib/ids.js'
import { type Response, startTestApp, toResponse, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertError, assertInvalid } from '../helpers/assertions.js'
import { createMandate, createSucceededPayment, createWish, getList, HOUR, inFuture } from '../helpers/fixtures.js'
import { freePort } from '../helpers/receiver.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Client input that used to reach a 500, refused with 400 `parameter_invalid` naming the parameter on
 * both stores (src/http/text-guard.ts, PageQuery in src/http/schemas.ts):
 * - list `limit` / `offset` not written in plain digits, or out of range (`offset` 0..10^9);
 * - a NUL character in any path id, query filter, body string or metadata key, and in the
 *   Idempotency-Key header (with other control characters); a lone surrogate in body text.
 * Random input over every route is in hostile-fuzz.test.ts, other accounts' objects in hostile-access.test.ts.
 */

/** Refused for both `limit` and `offset`, in the URL as written here (encoded below). */
const BAD_INTEGERS = [
  'Infinity', '-Infinity', 'NaN', '1e400', '1e20', '1e3', '1E3', '9223372036854775808', '18446744073709551616',
  '9'.repeat(400), '1.0', '1.', '.5', '1.5', '+5', ' 1', '1 ', '\t1', '0x10', '0b1', '0o7', '010', '00', '-0', '1_000', '1,000',
  '', 'abc', 'true', 'null', '[1]', '١', '１', '5\u0000',
]
const BAD_LIMITS = [...BAD_INTEGERS, '0', '101', '-1', '1000000000000']
const BAD_OFFSETS = [...BAD_INTEGERS, '-1', String(MAX_OFFSET + 1), '9007199254740993']

const NUL = '\u0000'

for (const kind of storeKinds()) {
  describe(`hostile input (${kind.name})`, () => {
    let t: TestApp
    let a: TestAccount
    /** Every list route, with ids of `a`'s objects in the nested ones. */
    let lists: string[]
    let wishId: string
    let mandateId: string
    let paymentId: string
    let endpointId: string

    before(async () => {
      t = await startTestApp(kind, { WEBHOOK_ALLOW_PRIVATE: 'true' })
      a = await t.account()
      wishId = (await createWish(a, { query: 'a kettle' })).id
      mandateId = (await createMandate(t, a, { usage: 'multi_use', budget_amount: 100_000 })).id
      paymentId = (await createSucceededPayment(a, mandateId, 500)).id
      const ep = await a.request('POST', '/webhook_endpoints', { url: `http://127.0.0.1:${await freePort()}/hooks`, events: ['*'] })
      assert.equal(ep.status, 201, ep.raw)
      endpointId = ep.body.data.id
      lists = ['/wishes', '/mandates', '/payments', '/events', '/webhook_endpoints', `/payments/${paymentId}/refunds`, `/webhook_endpoints/${endpointId}/deliveries`]
    })
    after(async () => { await t.close() })

    /** How many rows each table holds: a refused request writes nothing. */
    async function counts(): Promise<Record<string, number>> {
      const out: Record<string, number> = {}
      for (const table of ['wishes', 'mandates', 'payments', 'refunds', 'events', 'webhook_endpoints', 'idempotency_keys'] as const) {
        const row = await t.store.db.kysely.selectFrom(table).select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow()
        out[table] = Number(row.n)
      }
      return out
    }

    // ---------------------------------------------------------------- list numbers

    test('every list refuses each badly written or out-of-range limit and offset, naming it', async () => {
      for (const url of lists) {
        for (const value of BAD_LIMITS) assertInvalid(await a.request('GET', `${url}?limit=${encodeURIComponent(value)}`), 'limit')
        for (const value of BAD_OFFSETS) assertInvalid(await a.request('GET', `${url}?offset=${encodeURIComponent(value)}`), 'offset')
      }
    })

    test('plain digits within range are taken: offset up to 10^9, limit 1..100', async () => {
      for (const url of lists) {
        assert.deepEqual((await getList(a, `${url}?offset=${MAX_OFFSET}`)).meta.offset, MAX_OFFSET)
        assert.deepEqual((await getList(a, `${url}?offset=${MAX_OFFSET}`)).data, [])
        const page = await getList(a, `${url}?limit=100&offset=0`)
        assert.deepEqual([page.meta.limit, page.meta.offset], [100, 0])
        assert.equal((await getList(a, `${url}?limit=1`)).meta.limit, 1)
      }
    })

    test('a bad limit and a bad offset are both named', async () => {
      const res = await a.request('GET', '/payments?limit=1e1&offset=0x1')
      const error = assertError(res, 400, 'invalid_request_error', 'parameter_invalid')
      assert.deepEqual(error.errors.map((e: { param: string }) => e.param).sort(), ['limit', 'offset'])
      assert.match(error.errors.find((e: { param: string }) => e.param === 'offset').message, /0 to 1000000000/)
    })

    test('repeated members are refused, not summed or picked', async () => {
      assertInvalid(await a.request('GET', '/wishes?offset=1&offset=2'), 'offset')
      assertInvalid(await a.request('GET', '/wishes?limit=1&limit=1'), 'limit')
    })

    test('the digits rule holds for any integer in a path or query string, not only the list members', async () => {
      // A route of its own with an integer path parameter, behind the same plugins as the app.
      const app = Fastify({ logger: false, genReqId: () => newId('req') })
      registerValidators(app)
      registerRequestContext(app)
      registerErrorHandling(app)
      registerTextGuard(app)
      app.get('/things/:n', { schema: { params: Type.Object({ n: Type.Integer({ minimum: 1, maximum: 10 }) }) } }, async (request) => ({ n: (request.params as { n: number }).n }))
      try {
        const get = async (url: string): Promise<Response> => toResponse(await app.inject({ method: 'GET', url }))
        assert.deepEqual((await get('/things/7')).body, { n: 7 })
        for (const n of ['1e0', '7.0', '+7', '07', '0x7', 'Infinity', '%207']) {
          const res = await get(`/things/${n}`)
          assertInvalid(res, 'n')
          assert.match(res.body.error.message, /^n must be an integer from 1 to 10 written in plain decimal digits/)
        }
        assertInvalid(await get('/things/11'), 'n')
      } finally {
        await app.close()
      }
    })

    // ---------------------------------------------------------------- NUL in text

    test('a NUL in any path id is refused on every route that takes one', async () => {
      const before = await counts()
      const routes: Array<[string, string, unknown?]> = [
        ['GET', '/wishes/:id'], ['PUT', '/wishes/:id', { status: 'cancelled' }], ['DELETE', '/wishes/:id'],
        ['GET', '/mandates/:id'], ['POST', '/mandates/:id/revoke', {}],
        ['GET', '/payments/:id'], ['POST', '/payments/:id/refunds', { idempotency_key: 'nul-refund' }], ['GET', '/payments/:id/refunds'],
        ['GET', '/events/:id'],
        ['GET', '/webhook_endpoints/:id'], ['PUT', '/webhook_endpoints/:id', { enabled: false }], ['DELETE', '/webhook_endpoints/:id'],
        ['GET', '/webhook_endpoints/:id/deliveries'],
      ]
      for (const [method, path, body] of routes) {
        for (const id of ['%00', 'wish_01%00', `${wishId}%00`, '%00%00%00']) {
          const res = await a.request(method as never, path.replace(':id', id), body)
          assertInvalid(res, 'id')
          assert.match(res.body.error.message, /NUL/)
        }
      }
      assert.deepEqual(await counts(), before)
    })

    test('a NUL in any list filter is refused, naming it', async () => {
      const filters: Array<[string, string]> = [
        ['/wishes', 'status'], ['/mandates', 'status'], ['/mandates', 'wish_id'],
        ['/payments', 'status'], ['/payments', 'mandate_id'], ['/payments', 'wish_id'], ['/events', 'type'],
      ]
      for (const [url, param] of filters) {
        for (const value of ['%00', `${wishId}%00`, `a%00b`, 'active%00']) {
          assertInvalid(await a.request('GET', `${url}?${param}=${value}`), param)
        }
      }
      // In a member's name too: the guard names it before the schema calls it unknown.
      assertInvalid(await a.request('GET', '/wishes?a%00=1'), `a${NUL}`)
    })

    test('a NUL in any body string, metadata key or value, or array item is refused, naming it; nothing is written', async () => {
      const before = await counts()
      const wish = { query: 'a kettle' }
      const mandate = { protocol: 'ap2', max_amount: 5000, expires_at: inFuture(t, HOUR) }
      const payment = { mandate_id: mandateId, amount: 100, idempotency_key: 'nul-payment' }
      const endpoint = { url: 'http://127.0.0.1:9/hooks', events: ['*'] }
      const cases: Array<[string, string, Record<string, unknown>, string]> = [
        ['POST', '/wishes', { ...wish, query: `kettle${NUL}` }, 'query'],
        ['POST', '/wishes', { ...wish, category: `${NUL}` }, 'category'],
        ['POST', '/wishes', { ...wish, metadata: { [`ref${NUL}`]: 'x' } }, `metadata.ref${NUL}`],
        ['POST', '/wishes', { ...wish, metadata: { ref: `x${NUL}y` } }, 'metadata.ref'],
        ['POST', '/wishes', { ...wish, budget: { max: 10, currency: `us${NUL}` } }, 'budget.currency'],
        ['POST', '/wishes', { ...wish, expires_at: `${inFuture(t, HOUR)}${NUL}` }, 'expires_at'],
        ['POST', '/wishes', { ...wish, idempotency_key: `k${NUL}` }, 'idempotency_key'],
        ['PUT', `/wishes/${wishId}`, { query: `${NUL}kettle` }, 'query'],
        ['PUT', `/wishes/${wishId}`, { category: `c${NUL}` }, 'category'],
        ['PUT', `/wishes/${wishId}`, { metadata: { [NUL]: null } }, `metadata.${NUL}`],
        ['PUT', `/wishes/${wishId}`, { metadata: { ref: NUL } }, 'metadata.ref'],
        ['POST', '/mandates', { ...mandate, wish_id: `${wishId}${NUL}` }, 'wish_id'],
        ['POST', '/mandates', { ...mandate, currency: `${NUL}usd` }, 'currency'],
        ['POST', '/mandates', { ...mandate, metadata: { agent: `7${NUL}` } }, 'metadata.agent'],
        ['POST', '/payments', { ...payment, mandate_id: `${mandateId}${NUL}` }, 'mandate_id'],
        ['POST', '/payments', { ...payment, payment_method: `card${NUL}` }, 'payment_method'],
        ['POST', '/payments', { ...payment, metadata: { [`o${NUL}`]: '1' } }, `metadata.o${NUL}`],
        ['POST', '/payments', { ...payment, idempotency_key: `${NUL}` }, 'idempotency_key'],
        ['POST', `/payments/${paymentId}/refunds`, { amount: 1, reason: `changed${NUL}mind`, idempotency_key: 'nul-refund' }, 'reason'],
        ['POST', '/webhook_endpoints', { ...endpoint, description: `ops${NUL}` }, 'description'],
        ['POST', '/webhook_endpoints', { ...endpoint, url: `http://127.0.0.1:9/${NUL}` }, 'url'],
        ['POST', '/webhook_endpoints', { ...endpoint, events: ['*', `wish.created${NUL}`] }, 'events.1'],
        ['PUT', `/webhook_endpoints/${endpointId}`, { description: `${NUL}` }, 'description'],
        ['POST', '/wishes', { ...wish, [`query${NUL}`]: 'x' }, `query${NUL}`],
      ]
      for (const [method, url, body, param] of cases) {
        const res = await a.request(method as never, url, body)
        assertInvalid(res, param)
        assert.match(res.body.error.message, /NUL/, res.raw)
      }
      assert.deepEqual(await counts(), before)
    })

    test('every NUL of a body is named, up to 50', async () => {
      const res = await a.request('POST', '/wishes', { query: NUL, category: NUL, metadata: { a: NUL, b: 'fine' } })
      const error = assertError(res, 400, 'invalid_request_error', 'parameter_invalid')
      assert.deepEqual(error.errors.map((e: { param: string }) => e.param).sort(), ['category', 'metadata.a', 'query'])
      assert.equal(error.param, undefined)
      const many = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`k${i}`, NUL]))
      const capped = assertError(await a.request('POST', '/wishes', { query: 'x', metadata: many }), 400, 'invalid_request_error', 'parameter_invalid')
      assert.equal(capped.errors.length, 50)
    })

    test('bodies nested 200,000 deep are refused with a 400, never a stack overflow', async () => {
      const before = await counts()
      for (const [inner, code] of [['"\\u0000"', 'parameter_invalid'], ['1', 'parameter_invalid'], ['{"__proto__":1}', 'invalid_json']]) {
        const deep = `${'['.repeat(200_000)}${inner}${']'.repeat(200_000)}`
        assertError(await a.request('POST', '/wishes', `{"query":"x","metadata":{"k":${deep}}}`), 400, 'invalid_request_error', code!)
        assertError(await a.request('POST', '/wishes', deep), 400, 'invalid_request_error', code!)
      }
      assert.deepEqual(await counts(), before)
    })

    test('an Idempotency-Key header with a NUL or another control character is refused', async () => {
      const before = await counts()
      for (const key of [`k${NUL}`, NUL, 'k\u0001', 'k\u001f', 'k\u007f', 'k\tk', 'k\u0085']) {
        for (const [url, body] of [['/wishes', { query: 'x' }], ['/payments', { mandate_id: mandateId, amount: 1 }]] as const) {
          assertInvalid(await a.request('POST', url, body, { headers: { 'idempotency-key': key } }), 'idempotency_key')
        }
      }
      assert.deepEqual(await counts(), before)
    })

    test('a lone surrogate in a body string or key is refused on both stores (each would store it differently)', async () => {
      const before = await counts()
      const cases: Array<[string, string, Record<string, unknown>, string]> = [
        ['POST', '/wishes', { query: 'a\ud800b' }, 'query'],
        ['POST', '/wishes', { query: 'x', metadata: { 'k\udc00': 'v' } }, 'metadata.k\udc00'],
        ['POST', '/wishes', { query: 'x', metadata: { k: '\ude00\ud83d' } }, 'metadata.k'],
        ['PUT', `/wishes/${wishId}`, { category: '\udbff' }, 'category'],
        ['POST', `/payments/${paymentId}/refunds`, { amount: 1, reason: '\ud800', idempotency_key: 'lone-refund' }, 'reason'],
        ['PUT', `/webhook_endpoints/${endpointId}`, { description: 'x\udfff' }, 'description'],
      ]
      for (const [method, url, body, param] of cases) {
        const res = await a.request(method as never, url, body)
        assertInvalid(res, param)
        assert.match(res.body.error.message, /well-formed Unicode/, res.raw)
      }
      assert.deepEqual(await counts(), before)
    })

    test('text with other unusual characters is kept as sent (only NUL and lone surrogates are refused)', async () => {
      const text = 'tab\there, bell\u0007, emoji \u{1F600} \ud83d\ude00, RTL \u202e, zero-width \u200b, \uffff'
      const res = await a.request('POST', '/wishes', { query: text, category: 'x\u0001', metadata: { 'k\u0007': 'v\u0001' } })
      assert.equal(res.status, 201, res.raw)
      assert.equal(res.body.data.query, text)
      const read = await a.request('GET', `/wishes/${res.body.data.id}`)
      assert.deepEqual(read.body.data.metadata, { 'k\u0007': 'v\u0001' })
    })
  })
}
