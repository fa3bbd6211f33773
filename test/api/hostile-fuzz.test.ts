import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { type Response, startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { API_VERSION, REQUEST_ID } from '../helpers/assertions.js'
import { createMandate, createSucceededPayment, createWish, HOUR, inFuture } from '../helpers/fixtures.js'
import { storeKinds } from '../helpers/stores.js'
import { ACP_API_VERSION } from '../../src/modules/acp/schemas.js'
import { DELEGATE_PAYMENT_PATH as ACP_PATH } from '../../src/modules/acp/routes.js'

/**
 * Property-based fuzzing of every route the app describes in /openapi.json, on both stores: arbitrary
 * path ids, query strings (numbers in every notation, huge numbers, any Unicode, NUL, empty values,
 * repeated members), bodies (any JSON at each known member, unknown members, deep nesting, long
 * strings, non-objects), methods, keys and Idempotency-Key headers. Whatever is sent:
 * - never a 5xx;
 * - Request-Id and API-Version on every answer;
 * - every 4xx in the contract's envelope (type, code, message, request_id = the Request-Id header).
 *
 * Paths are percent-encoded from UTF-8 bytes, so they are never malformed (`/wishes/%zz`): framework
 * URL errors are covered by test/api/http.test.ts. URLs stay under a few kilobytes (414/431 elsewhere).
 *
 * Runs are bounded (FUZZ_RUNS, default 250 per property and store); FUZZ_SEED replays a failure.
 */

const RUNS = Number(process.env.FUZZ_RUNS ?? 250)
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED)
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'] as const
const NUL = '\u0000'

/** Every byte outside the unreserved set percent-encoded; lone surrogates become U+FFFD, never a throw. */
function encode(text: string): string {
  let out = ''
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte)
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}

// ---------------------------------------------------------------- text and numbers

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c))
const oddChar = fc.constantFrom(NUL, '\u0001', '\t', '\n', '\r', '\u007f', '\u0085', '\u00a0', '\u200b', '\u202e', '\ufeff', '\uffff', '%', '&', '=', '?', '#', '/', '\\', '"', "'", '<', '>', '{', '}', '$', '*', '.', ' ')
const text = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: fc.oneof(oddChar, loneSurrogate, fc.string({ unit: 'grapheme', maxLength: 1 })), maxLength: 20 }) },
  { weight: 1, arbitrary: fc.constantFrom('', NUL, `a${NUL}b`, ' ', '\u{1F600}', 'null', 'undefined', '[]', '{}', '__proto__', 'constructor', "' OR 1=1 --", '"; DROP TABLE wishes; --', '../../etc/passwd') },
  { weight: 1, arbitrary: fc.nat({ max: 6000 }).map((n) => 'x'.repeat(n)) },
)

/** A number as text, in every notation a client might write. */
const numberText = fc.oneof(
  fc.constantFrom('0', '1', '10', '100', '101', '-1', '-0', '00', '010', '1e3', '1E3', '1e-3', '1e400', '-1e400', '1e20', 'Infinity', '-Infinity', 'NaN',
    '9223372036854775807', '9223372036854775808', '18446744073709551616', '9007199254740993', '1000000000', '1000000001', '1.0', '1.', '.5', '+5',
    ' 1', '1 ', '0x10', '0b1', '0o7', '1_000', '1,000', '１', '١', '5\u0000', ''),
  fc.integer().map(String),
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map(String),
  fc.double().map(String),
  fc.double().map((d) => (Number.isFinite(d) ? d.toExponential() : String(d))),
  fc.nat({ max: 500 }).map((n) => '9'.repeat(n)),
)

/** Mostly ordinary text a member would take, sometimes anything. */
const words = fc.oneof({ weight: 3, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }) }, { weight: 1, arbitrary: text })

// ---------------------------------------------------------------- JSON values

/** Any JSON value, including deep ones and numbers JSON can write but JS cannot hold. */
const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 2, arbitrary: text },
  { weight: 2, arbitrary: fc.oneof(fc.integer(), fc.double(), fc.constantFrom(0, -0, 1e12, 1e12 + 1, 2 ** 53, 1e308, -1e308, 5e-324, 0.1, 199.999)) },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [], {}, [null], { '': '' }, JSON.parse('{"__proto__":{"status":"succeeded"}}'), { constructor: { prototype: 1 } }) },
  { weight: 1, arbitrary: fc.nat({ max: 3000 }).map((n) => JSON.parse(`${'['.repeat(n)}1${']'.repeat(n)}`) as unknown) },
  { weight: 1, arbitrary: fc.dictionary(text, fc.oneof(text, fc.constant(null), fc.integer()), { maxKeys: 60 }) },
)

// ---------------------------------------------------------------- the app under test

interface Route { method: string, path: string, query: string[], body: string[], required: string[] }

for (const kind of storeKinds()) {
  describe(`hostile fuzz (${kind.name})`, () => {
    let t: TestApp
    let a: TestAccount
    let other: TestAccount
    let routes: Route[]
    /** Real ids of `a` (and of another account), so that some requests reach the services. */
    const ids: string[] = []
    const own = { wish: '', mandate: '', payment: '', endpoint: '', event: '' }
    /** Objects the fuzzer may revoke or delete, so that the ones above stay usable. */
    const spare = { wish: '', mandate: '', endpoint: '' }

    before(async () => {
      t = await startTestApp(kind, { WEBHOOK_ALLOW_PRIVATE: 'true' })
      a = await t.account()
      other = await t.account()
      const wish = await createWish(a, { query: 'a lamp', budget: { max: 500, currency: 'usd' } })
      const mandate = await createMandate(t, a, { usage: 'multi_use', max_amount: 100_000, budget_amount: 10_000_000 })
      const payment = await createSucceededPayment(a, mandate.id, 5000)
      const ep = await a.request('POST', '/webhook_endpoints', { url: 'http://127.0.0.1:9/hooks', events: ['*'] })
      assert.equal(ep.status, 201, ep.raw)
      const foreign = await createWish(other, { query: 'not yours' })
      spare.wish = (await createWish(a, { query: 'a spare lamp' })).id
      spare.mandate = (await createMandate(t, a)).id
      spare.endpoint = (await a.request('POST', '/webhook_endpoints', { url: 'http://127.0.0.1:9/spare', events: ['*'] })).body.data.id
      const events = await a.request('GET', '/events?limit=1')
      Object.assign(own, { wish: wish.id, mandate: mandate.id, payment: payment.id, endpoint: ep.body.data.id, event: events.body.data[0].id })
      ids.push(...Object.values(own), foreign.id)

      const doc = (await t.inject({ method: 'GET', url: '/openapi.json' })).body
      routes = []
      for (const [path, operations] of Object.entries<Record<string, any>>(doc.paths)) {
        for (const [method, op] of Object.entries<any>(operations)) {
          const body = op.requestBody?.content?.['application/json']?.schema
          routes.push({
            method: method.toUpperCase(),
            path,
            query: (op.parameters ?? []).filter((p: any) => p.in === 'query').map((p: any) => p.name as string),
            body: Object.keys(body?.properties ?? {}),
            required: body?.required ?? [],
          })
        }
      }
      assert.ok(routes.length >= 25, `${routes.length} routes described`)
    })
    after(async () => { await t.close() })

    /** The checks every answer must pass, whatever was asked. */
    /**
     * Never a 5xx, always Request-Id and API-Version, and errors in the envelope; on the ACP route (its
     * path, answered by its scope) ACP's version and flat error instead (test/api/acp-delegate-payment.test.ts).
     */
    function check(res: Response, method: string, url = ''): void {
      assert.ok(res.status < 500, `${res.status}: ${res.raw.slice(0, 500)}`)
      const acp = url.split('?')[0] === ACP_PATH && res.headers['api-version'] === ACP_API_VERSION
      assert.equal(res.headers['api-version'], acp ? ACP_API_VERSION : API_VERSION, 'API-Version header')
      const requestId = res.headers['request-id']
      assert.match(String(requestId), REQUEST_ID, 'Request-Id header')
      if (acp && res.status >= 400 && method !== 'HEAD') {
        for (const member of ['type', 'code', 'message'] as const) assert.ok(typeof res.body?.[member] === 'string' && res.body[member].length > 0, `ACP error ${member}: ${res.raw.slice(0, 500)}`)
        return
      }
      if (res.status < 400 || method === 'HEAD') return
      const error = res.body?.error
      assert.ok(error, `an error envelope: ${res.status} ${res.raw.slice(0, 500)}`)
      for (const member of ['type', 'code', 'message'] as const) {
        assert.equal(typeof error[member], 'string', `error.${member}: ${res.raw.slice(0, 500)}`)
        assert.ok(error[member].length > 0, `error.${member} not empty`)
      }
      // A replay is the first answer byte for byte, its request_id the first request's; the header is this one's.
      if (res.headers['idempotent-replayed'] !== 'true') assert.equal(error.request_id, requestId, 'error.request_id is the Request-Id header')
      else assert.match(String(error.request_id), REQUEST_ID)
    }

    // ---------------------------------------------------------------- request parts

    const pathId = (route: Route) => fc.oneof(
      { weight: 3, arbitrary: idFor(route) },
      { weight: 1, arbitrary: fc.constantFrom('wish_', 'mdt_', 'pay_', 're_', 'evt_', 'we_', 'acct_', 'key_').chain((p) => fc.string({ unit: 'binary-ascii', maxLength: 30 }).map((s) => p + s)) },
      { weight: 3, arbitrary: text.filter((s) => Buffer.byteLength(s) < 1500) },
      { weight: 1, arbitrary: fc.constantFrom('%', '%%', '%25', '..', '.', '%2F', 'a/b', '%00') },
    )

    /** An id of the kind the route takes, mostly; any id otherwise. */
    function idFor(route: Route): fc.Arbitrary<string> {
      const prefix = route.path.split('/')[1]
      const destructive = route.method === 'DELETE' || route.path.endsWith('/revoke')
      const right = destructive ? (prefix === 'wishes' ? spare.wish : prefix === 'mandates' ? spare.mandate : spare.endpoint)
        : prefix === 'wishes' ? own.wish : prefix === 'mandates' ? own.mandate : prefix === 'payments' ? own.payment
        : prefix === 'webhook_endpoints' ? own.endpoint : own.event
      return fc.oneof({ weight: 4, arbitrary: fc.constant(right) }, { weight: 1, arbitrary: fc.constantFrom(...ids) })
    }

    function urlOf(route: Route, id: string, query: Array<[string, string]>): string {
      const path = route.path.replace(/\{[^}]+\}/g, () => encode(id))
      const qs = query.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&')
      return qs ? `${path}?${qs}` : path
    }

    function queryFor(route: Route): fc.Arbitrary<Array<[string, string]>> {
      const name = fc.oneof(
        { weight: 4, arbitrary: route.query.length ? fc.constantFrom(...route.query) : fc.constant('limit') },
        { weight: 1, arbitrary: fc.constantFrom('limit', 'offset', 'status', 'wish_id', 'mandate_id', 'type', 'account_id', 'expand[]', '__proto__') },
        { weight: 1, arbitrary: text.filter((s) => Buffer.byteLength(s) < 200) },
      )
      const value = fc.oneof({ weight: 3, arbitrary: numberText }, { weight: 2, arbitrary: text.filter((s) => Buffer.byteLength(s) < 600) }, { weight: 1, arbitrary: fc.constantFrom(...ids) })
      // Repeated names (`?a=1&a=2`) come from the same name drawn twice.
      return fc.array(fc.tuple(name, value), { maxLength: 5 })
    }

    /** A plausible value for a known member, so that deeper code runs, or anything at all. */
    function memberValue(member: string): fc.Arbitrary<unknown> {
      const plausible: Record<string, fc.Arbitrary<unknown>> = {
        query: words, category: words, description: words, reason: words, payment_method: fc.constantFrom('card', 'wallet', 'bank_transfer', 'test_card_declined', 'cash'),
        protocol: fc.constantFrom('ap2', 'acp', 'auto', 'AP2'), usage: fc.constantFrom('single_use', 'multi_use'), enabled: fc.boolean(),
        status: fc.constantFrom('active', 'pending', 'fulfilled', 'cancelled', 'expired', 'succeeded'),
        currency: fc.constantFrom('usd', 'EUR', 'jpy', 'BHD', 'xxx', 'US'),
        amount: fc.oneof(fc.integer({ min: -5, max: 20_000 }), fc.constantFrom(1e12, 1e12 + 1, 2 ** 53, 1e308, 0.5)),
        max_amount: fc.oneof(fc.integer({ min: -5, max: 200_000 }), fc.constantFrom(1e12, 1e13, 2 ** 63)),
        budget_amount: fc.oneof(fc.integer({ min: -5, max: 20_000_000 }), fc.constantFrom(1e12, 1e13)),
        budget: fc.record({ max: fc.oneof(fc.double({ min: -1, max: 2e12 }), fc.constant(199.999), fc.constant(null)), currency: fc.constantFrom('usd', 'jpy', 'bhd', 'zzz') }, { requiredKeys: [] }),
        wish_id: fc.oneof({ weight: 3, arbitrary: fc.constant(own.wish) }, { weight: 1, arbitrary: fc.constantFrom(...ids) }),
        mandate_id: fc.oneof({ weight: 3, arbitrary: fc.constant(own.mandate) }, { weight: 1, arbitrary: fc.constantFrom(...ids) }),
        expires_at: fc.oneof(fc.constant(inFuture(t, HOUR)), fc.constant(inFuture(t, -HOUR)), fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), text),
        not_before: fc.oneof(fc.constant(inFuture(t, -HOUR)), fc.date({ noInvalidDate: true }).map((d) => d.toISOString())),
        metadata: fc.dictionary(text, fc.oneof(text, fc.constant(null)), { maxKeys: 55 }),
        url: fc.constantFrom('http://127.0.0.1:9/h', 'https://example.org/h', 'ftp://x', 'http://user:pw@127.0.0.1/', `http://127.0.0.1/${NUL}`, 'http://[::1]:9/'),
        events: fc.array(fc.constantFrom('*', 'wish.created', 'payment.succeeded', 'nope'), { maxLength: 15 }),
        idempotency_key: fc.oneof({ weight: 3, arbitrary: fc.uuid() }, { weight: 1, arbitrary: text }),
      }
      return plausible[member] ?? anyJson
    }

    /**
     * Mostly a body the route could take (its required members and some optional ones, plausible
     * values), often with one member replaced by anything or one unknown member added; sometimes chaos.
     */
    function bodyFor(route: Route): fc.Arbitrary<unknown> {
      const optional = route.body.filter((m) => !route.required.includes(m))
      const valid = fc.subarray(optional).chain((chosen) =>
        fc.tuple(...[...route.required, ...chosen].map((m) => memberValue(m).map((v) => [m, v] as const))).map((entries) => Object.fromEntries(entries)))
      const members = route.body.length ? route.body : ['query']
      const unknownName = fc.oneof(fc.constantFrom('id', 'account_id', 'status', 'amount_used', 'secret', '__proto__', 'created_at'), text)
      const oneHostile = fc.tuple(valid, fc.constantFrom(...members), anyJson).map(([body, m, v]) => ({ ...body, [m]: v }))
      const oneUnknown = fc.tuple(valid, unknownName, anyJson).map(([body, k, v]) => Object.assign(Object.fromEntries([[k, v]]), body) as Record<string, unknown>)
      const chaos = fc.tuple(
        fc.subarray(members).chain((chosen) => fc.tuple(...chosen.map((m) => fc.oneof(memberValue(m), anyJson).map((v) => [m, v] as const)))),
        fc.array(fc.tuple(unknownName, anyJson), { maxLength: 3 }),
      ).map(([known, unknown]) => Object.fromEntries([...known, ...unknown]))
      return fc.oneof(
        { weight: 4, arbitrary: valid },
        { weight: 3, arbitrary: oneHostile },
        { weight: 1, arbitrary: oneUnknown },
        { weight: 1, arbitrary: chaos },
        { weight: 1, arbitrary: anyJson },
      )
    }

    const keyArb = fc.oneof(
      { weight: 8, arbitrary: fc.constant('write') },
      { weight: 1, arbitrary: fc.constant('read') },
      { weight: 1, arbitrary: fc.oneof(fc.constant(null), fc.constant('other'), fc.string({ unit: 'binary-ascii', maxLength: 60 })) },
    )
    const idempotencyHeader = fc.option(fc.oneof(fc.uuid(), fc.string({ unit: 'binary-ascii', maxLength: 300 }), fc.constantFrom(NUL, 'k\u0001', 'k\tk', ' ')), { nil: undefined, freq: 3 })

    async function send(method: string, url: string, body: unknown, key: unknown, idempotencyKey: string | undefined, raw = false): Promise<Response> {
      const headers: Record<string, string> = {}
      if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey
      const chosen = key === 'write' ? a.key : key === 'read' ? a.readKey : key === 'other' ? other.key : key === null ? null : String(key)
      const payload = body === undefined ? undefined : raw ? String(body) : JSON.stringify(body)
      return a.request(method as never, url, payload, { key: chosen, headers })
    }

    // ---------------------------------------------------------------- properties

    const params = (runs: number) => ({ numRuns: runs, ...(SEED !== undefined ? { seed: SEED } : {}) })

    test('any request to any described route: never a 5xx, always the headers and the error envelope', async () => {
      const request = fc.constantFrom(...routes).chain((route) => fc.record({
        route: fc.constant(route),
        method: fc.oneof({ weight: 5, arbitrary: fc.constant(route.method) }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
        id: pathId(route),
        query: queryFor(route),
        body: fc.option(bodyFor(route), { nil: undefined, freq: 8 }),
        key: keyArb,
        idempotencyKey: idempotencyHeader,
      }))
      await fc.assert(fc.asyncProperty(request, async (r) => {
        const body = r.method === 'GET' || r.method === 'HEAD' ? undefined : r.body
        const url = urlOf(r.route, r.id, r.query)
        check(await send(r.method, url, body, r.key, r.idempotencyKey), r.method, url)
      }), params(RUNS))
    })

    test('list query strings: numbers in every notation, any text, repeated members', async () => {
      const lists = routes.filter((r) => r.method === 'GET' && r.query.includes('offset'))
      assert.ok(lists.length >= 7, `${lists.length} lists`)
      const request = fc.constantFrom(...lists).chain((route) => fc.tuple(fc.constant(route), fc.constantFrom(...ids), queryFor(route)))
      await fc.assert(fc.asyncProperty(request, async ([route, id, query]) => {
        const res = await send('GET', urlOf(route, id, query), undefined, 'write', undefined)
        check(res, 'GET')
        // A page is only ever answered for plain-digit limit and offset within range.
        if (res.status === 200) {
          for (const [name, value] of query) {
            if (name === 'limit') assert.match(value, /^([1-9]|[1-9][0-9]|100)$/)
            if (name === 'offset') assert.ok(/^(0|[1-9][0-9]{0,9})$/.test(value) && Number(value) <= 1e9, `offset=${value}`)
          }
        }
      }), params(RUNS))
    })

    test('bodies: any JSON at each known member, unknown members, non-objects, invalid JSON', async () => {
      const writes = routes.filter((r) => r.body.length > 0)
      assert.ok(writes.length >= 7, `${writes.length} routes with a body`)
      const raw = fc.oneof(
        fc.constantFrom('', '{', '{"query":', 'null', '[]', '"x"', '1e400', '{"a":1,"a":2}', '{"__proto__":{"x":1}}', `{"query":"${NUL}"}`, '\ufeff{}'),
        text,
      )
      const request = fc.constantFrom(...writes).chain((route) => fc.record({
        route: fc.constant(route),
        id: idFor(route),
        body: fc.oneof({ weight: 5, arbitrary: bodyFor(route).map((b) => JSON.stringify(b)) }, { weight: 1, arbitrary: raw }),
        idempotencyKey: fc.option(fc.uuid(), { nil: undefined }),
      }))
      await fc.assert(fc.asyncProperty(request, async (r) => {
        const url = urlOf(r.route, r.id, [])
        check(await send(r.route.method, url, r.body, 'write', r.idempotencyKey, true), r.route.method, url)
      }), params(RUNS))
    })

    test('text that is accepted is stored as sent: the wish read back is the wish created', async () => {
      const body = fc.record({
        query: text,
        category: fc.option(text, { nil: undefined }),
        metadata: fc.option(fc.dictionary(text, text, { maxKeys: 5 }), { nil: undefined }),
      }, { requiredKeys: ['query'] })
      await fc.assert(fc.asyncProperty(body, async (wish) => {
        const created = await send('POST', '/wishes', wish, 'write', undefined)
        check(created, 'POST')
        if (created.status !== 201) return
        const read = await send('GET', `/wishes/${created.body.data.id}`, undefined, 'write', undefined)
        assert.equal(read.status, 200, read.raw)
        assert.deepEqual(read.body.data, created.body.data)
      }), params(Math.ceil(RUNS / 2)))
    })
  })
}
