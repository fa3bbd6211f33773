import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { API_VERSION, assertEnvelopeHeaders, assertError, assertInvalid, assertNotFound, ids, ISO_MS, newestFirst, PAGING_QUERY_CASES, requestIdOf } from '../helpers/assertions.js'
import { countEvents, createWish, eventsOf, getData, getList, inFuture } from '../helpers/fixtures.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Wishes through HTTP, on every store: contract section 4 and the list rules of section 1,
 * with the error envelope of section 2.
 */

const WISH_ID = /^wish_[0-9A-Za-z]{16,}$/
const STATUSES = ['active', 'pending', 'fulfilled', 'cancelled', 'expired'] as const
type Status = (typeof STATUSES)[number]
const TERMINAL: readonly Status[] = ['fulfilled', 'cancelled', 'expired']
const ALLOWED: Record<Status, readonly Status[]> = {
  active: ['pending', 'fulfilled', 'cancelled', 'expired'],
  pending: ['active', 'fulfilled', 'cancelled', 'expired'],
  fulfilled: [],
  cancelled: [],
  expired: [],
}

for (const kind of storeKinds()) {
  describe(`wishes (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    const create = (a: TestAccount, body: Record<string, unknown> = { query: 'a kettle' }) => createWish(a, body)
    const get = (a: TestAccount, id: string) => getData(a, `/wishes/${id}`)
    const list = (a: TestAccount, qs = '') => getList(a, `/wishes${qs}`)

    async function update(a: TestAccount, id: string, body: Record<string, unknown>): Promise<any> {
      const res = await a.request('PUT', `/wishes/${id}`, body)
      assert.equal(res.status, 200, res.raw)
      return res.body.data
    }

    /** A wish in the given status, reached through the API (expired by PUT). */
    async function wishIn(a: TestAccount, status: Status, body: Record<string, unknown> = { query: 'a kettle' }): Promise<any> {
      const wish = await create(a, body)
      if (status === 'active') return wish
      return update(a, wish.id, { status })
    }

    // ---------------------------------------------------------------- create

    test('POST /wishes 201 returns the full wish, normalised', async () => {
      const a = await t.account()
      const before = t.clock.now().toISOString()
      const res = await a.request('POST', '/wishes', {
        query: '  Noise-cancelling headphones under $200 \n',
        budget: { max: 199.99, currency: 'usd' },
        protocol: 'auto',
        category: 'electronics',
        metadata: { order_ref: 'A-1001', quantity: '2', gift: 'yes' },
      })
      const afterIso = t.clock.now().toISOString()
      assert.equal(res.status, 201, res.raw)
      assertEnvelopeHeaders(res)
      assert.deepEqual(Object.keys(res.body), ['data'])
      const w = res.body.data
      assert.match(w.id, WISH_ID)
      assert.match(w.created_at, ISO_MS)
      assert.ok(w.created_at >= before && w.created_at <= afterIso, `${w.created_at} within [${before}, ${afterIso}]`)
      assert.deepEqual(w, {
        id: w.id,
        status: 'active',
        query: 'Noise-cancelling headphones under $200',
        budget: { max: 199.99, currency: 'USD' },
        protocol: 'ap2',
        category: 'electronics',
        metadata: { order_ref: 'A-1001', quantity: '2', gift: 'yes' },
        expires_at: null,
        created_at: w.created_at,
        updated_at: w.created_at,
      })
      // What was stored is what was returned.
      assert.deepEqual(await get(a, w.id), w)
    })

    test('POST /wishes defaults: budget null, protocol ap2, category null, metadata {}, expires_at null', async () => {
      const a = await t.account()
      const w = await create(a, { query: 'a kettle' })
      assert.deepEqual(w, {
        id: w.id,
        status: 'active',
        query: 'a kettle',
        budget: null,
        protocol: 'ap2',
        category: null,
        metadata: {},
        expires_at: null,
        created_at: w.created_at,
        updated_at: w.created_at,
      })
      assert.match(w.created_at, ISO_MS)
      const other = await create(a, { query: 'a kettle' })
      assert.notEqual(other.id, w.id)
      const explicitNulls = await create(a, { query: 'x', budget: null, category: null, expires_at: null })
      assert.equal(explicitNulls.budget, null)
      assert.equal(explicitNulls.category, null)
      assert.equal(explicitNulls.expires_at, null)
    })

    test('POST /wishes budget: currency defaults to USD and is upper-cased; max may be absent', async () => {
      const a = await t.account()
      assert.deepEqual((await create(a, { query: 'q', budget: { currency: 'eur' } })).budget, { max: null, currency: 'EUR' })
      assert.deepEqual((await create(a, { query: 'q', budget: { max: 50 } })).budget, { max: 50, currency: 'USD' })
      assert.deepEqual((await create(a, { query: 'q', budget: { max: 0, currency: 'GBP' } })).budget, { max: 0, currency: 'GBP' })
      assert.deepEqual((await create(a, { query: 'q', budget: { max: 1000, currency: 'jpy' } })).budget, { max: 1000, currency: 'JPY' })
      assert.deepEqual((await create(a, { query: 'q', budget: { max: 1.234, currency: 'KWD' } })).budget, { max: 1.234, currency: 'KWD' })
    })

    test('POST /wishes protocol: auto -> ap2 by default, explicit ap2 and acp kept', async () => {
      const a = await t.account()
      assert.equal((await create(a, { query: 'q', protocol: 'auto' })).protocol, 'ap2')
      assert.equal((await create(a, { query: 'q' })).protocol, 'ap2')
      assert.equal((await create(a, { query: 'q', protocol: 'acp' })).protocol, 'acp')
      assert.equal((await create(a, { query: 'q', protocol: 'ap2' })).protocol, 'ap2')
    })

    test('POST /wishes protocol: auto resolves through DEFAULT_PROTOCOL', async () => {
      const acpApp = await startTestApp(kind, { DEFAULT_PROTOCOL: 'acp' })
      try {
        const a = await acpApp.account()
        for (const body of [{ query: 'q', protocol: 'auto' }, { query: 'q' }]) {
          const res = await a.request('POST', '/wishes', body)
          assert.equal(res.status, 201, res.raw)
          assert.equal(res.body.data.protocol, 'acp')
        }
        const explicit = await a.request('POST', '/wishes', { query: 'q', protocol: 'ap2' })
        assert.equal(explicit.status, 201, explicit.raw)
        assert.equal(explicit.body.data.protocol, 'ap2')
      } finally {
        await acpApp.close()
      }
    })

    test('POST /wishes expires_at in the future is stored as UTC with milliseconds', async () => {
      const a = await t.account()
      const w = await create(a, { query: 'q', expires_at: '2099-01-01T12:00:00+02:00' })
      assert.equal(w.expires_at, '2099-01-01T10:00:00.000Z')
      assert.equal(w.status, 'active')
      const soon = inFuture(t, 3_600_000)
      assert.equal((await create(a, { query: 'q', expires_at: soon })).expires_at, soon)
    })

    test('POST /wishes accepts the upper bounds', async () => {
      const a = await t.account()
      assert.equal((await create(a, { query: 'x'.repeat(2000) })).query, 'x'.repeat(2000))
      assert.equal((await create(a, { query: 'q', category: 'c'.repeat(100) })).category, 'c'.repeat(100))
      const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, `v${i}`]))
      assert.deepEqual((await create(a, { query: 'q', metadata: fifty })).metadata, fifty)
      const wide = { ['k'.repeat(40)]: 'v'.repeat(500) }
      assert.deepEqual((await create(a, { query: 'q', metadata: wide })).metadata, wide)
    })

    test('POST /wishes validation: each bad member is a 400 naming it, and nothing is created', async () => {
      const a = await t.account()
      const cases: Array<[string, unknown, string, string]> = [
        ['query missing', {}, 'query', 'parameter_missing'],
        ['query missing (no body)', undefined, 'query', 'parameter_missing'],
        ['query empty', { query: '' }, 'query', 'parameter_invalid'],
        ['query whitespace only', { query: '   \t\n ' }, 'query', 'parameter_invalid'],
        ['query 2001 chars', { query: 'x'.repeat(2001) }, 'query', 'parameter_invalid'],
        ['query a number', { query: 42 }, 'query', 'parameter_invalid'],
        ['query null', { query: null }, 'query', 'parameter_invalid'],
        ['budget a string', { query: 'q', budget: '100' }, 'budget', 'parameter_invalid'],
        ['budget.max negative', { query: 'q', budget: { max: -1 } }, 'budget.max', 'parameter_invalid'],
        ['budget.max a string', { query: 'q', budget: { max: '100' } }, 'budget.max', 'parameter_invalid'],
        ['budget.max 199.999 USD', { query: 'q', budget: { max: 199.999, currency: 'USD' } }, 'budget.max', 'parameter_invalid'],
        ['budget.max 199.999 default USD', { query: 'q', budget: { max: 199.999 } }, 'budget.max', 'parameter_invalid'],
        ['budget.max 1.5 JPY', { query: 'q', budget: { max: 1.5, currency: 'jpy' } }, 'budget.max', 'parameter_invalid'],
        ['budget.currency XYZ', { query: 'q', budget: { max: 1, currency: 'XYZ' } }, 'budget.currency', 'parameter_invalid'],
        ['budget.currency not a code', { query: 'q', budget: { currency: 'dollars' } }, 'budget.currency', 'parameter_invalid'],
        ['budget unknown member', { query: 'q', budget: { max: 1, limit: 2 } }, 'budget.limit', 'parameter_unknown'],
        ['protocol foo', { query: 'q', protocol: 'foo' }, 'protocol', 'parameter_invalid'],
        ['category empty', { query: 'q', category: '' }, 'category', 'parameter_invalid'],
        ['category 101 chars', { query: 'q', category: 'c'.repeat(101) }, 'category', 'parameter_invalid'],
        ['category a number', { query: 'q', category: 7 }, 'category', 'parameter_invalid'],
        ['metadata 51 keys', { query: 'q', metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) }, 'metadata', 'parameter_invalid'],
        ['metadata an array', { query: 'q', metadata: ['a'] }, 'metadata', 'parameter_invalid'],
        ['metadata key 41 chars', { query: 'q', metadata: { ['k'.repeat(41)]: 'v' } }, `metadata.${'k'.repeat(41)}`, 'parameter_invalid'],
        ['metadata value an object', { query: 'q', metadata: { nested: { a: '1' } } }, 'metadata.nested', 'parameter_invalid'],
        ['metadata value a number (strings only, docs/decisions.md)', { query: 'q', metadata: { n: 3 } }, 'metadata.n', 'parameter_invalid'],
        ['metadata value 501 chars', { query: 'q', metadata: { note: 'v'.repeat(501) } }, 'metadata.note', 'parameter_invalid'],
        ['expires_at in the past', { query: 'q', expires_at: '2001-01-01T00:00:00.000Z' }, 'expires_at', 'parameter_invalid'],
        ['expires_at not a date', { query: 'q', expires_at: 'next tuesday' }, 'expires_at', 'parameter_invalid'],
        ['expires_at a number', { query: 'q', expires_at: 1893456000000 }, 'expires_at', 'parameter_invalid'],
        ['unknown top-level member', { query: 'q', colour: 'red' }, 'colour', 'parameter_unknown'],
        ['status is not settable on create', { query: 'q', status: 'fulfilled' }, 'status', 'parameter_unknown'],
        ['id is not settable', { query: 'q', id: 'wish_mine' }, 'id', 'parameter_unknown'],
        ['created_at is not settable', { query: 'q', created_at: '2020-01-01T00:00:00.000Z' }, 'created_at', 'parameter_unknown'],
      ]
      for (const [name, body, param, code] of cases) {
        const res = await a.request('POST', '/wishes', body)
        assert.doesNotThrow(() => assertInvalid(res, param, code), `${name}: ${res.raw}`)
      }
      const past = new Date(t.clock.now().getTime() - 1000).toISOString()
      assertInvalid(await a.request('POST', '/wishes', { query: 'q', expires_at: past }), 'expires_at')
      const listed = await list(a)
      assert.equal(listed.meta.total, 0)
      assert.equal(await countEvents(t, a.id), 0)
    })

    test('POST /wishes validation: errors lists every failed parameter at once', async () => {
      const a = await t.account()
      const res = await a.request('POST', '/wishes', {
        query: 42,
        budget: { max: -1, currency: 'usd', colour: 'red' },
        protocol: 'foo',
        category: '',
        extra: true,
      })
      assert.equal(res.status, 400, res.raw)
      const error = res.body.error
      assert.equal(error.type, 'invalid_request_error')
      assert.equal(error.request_id, requestIdOf(res))
      assert.equal(error.param, undefined, 'no single param when several failed')
      assert.ok(['parameter_invalid', 'parameter_unknown'].includes(error.code), error.code)
      const byParam = Object.fromEntries(error.errors.map((e: any) => [e.param, e.code]))
      assert.deepEqual(byParam, {
        query: 'parameter_invalid',
        'budget.max': 'parameter_invalid',
        'budget.colour': 'parameter_unknown',
        protocol: 'parameter_invalid',
        category: 'parameter_invalid',
        extra: 'parameter_unknown',
      })
      for (const e of error.errors) assert.equal(typeof e.message, 'string')
      assert.equal((await list(a)).meta.total, 0)
    })

    test('POST /wishes validation: errors also lists failures found beyond the schema (currency, decimals, past expiry)', async () => {
      const a = await t.account()
      const past = new Date(t.clock.now().getTime() - 60_000).toISOString()
      const both = await a.request('POST', '/wishes', { query: 'q', budget: { max: 1.999 }, expires_at: past })
      const e1 = assertError(both, 400, 'invalid_request_error', 'parameter_invalid')
      assert.deepEqual(e1.errors.map((e: any) => e.param).sort(), ['budget.max', 'expires_at'])
      assert.equal(e1.param, undefined, 'no single param when several failed')

      const mixed = await a.request('POST', '/wishes', { budget: { max: 1, currency: 'XYZ' } })
      assert.equal(mixed.status, 400, mixed.raw)
      const e2 = mixed.body.error
      assert.equal(e2.type, 'invalid_request_error')
      assert.equal(e2.param, undefined, 'no single param when several failed')
      assert.deepEqual(
        Object.fromEntries(e2.errors.map((e: any) => [e.param, e.code])),
        { query: 'parameter_missing', 'budget.currency': 'parameter_invalid' },
      )
      assert.equal((await list(a)).meta.total, 0)
    })

    test('POST /wishes body rules: malformed JSON 400 invalid_json, other media type 415', async () => {
      const a = await t.account()
      assertError(await a.request('POST', '/wishes', '{"query": '), 400, 'invalid_request_error', 'invalid_json')
      assertError(
        await a.request('POST', '/wishes', 'query=kettle', { headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
        415, 'invalid_request_error', 'unsupported_media_type',
      )
      assertError(
        await a.request('POST', '/wishes', JSON.stringify({ query: 'x'.repeat(1024 * 1024 + 10) })),
        413, 'invalid_request_error', 'payload_too_large',
      )
      assert.equal((await list(a)).meta.total, 0)
    })

    // ---------------------------------------------------------------- read

    test('GET /wishes/:id 200 {data}; unknown id 404 resource_missing', async () => {
      const a = await t.account()
      const w = await create(a, { query: 'a kettle', metadata: { a: '1' } })
      const res = await a.request('GET', `/wishes/${w.id}`)
      assert.equal(res.status, 200)
      assertEnvelopeHeaders(res)
      assert.deepEqual(res.body, { data: w })
      assertNotFound(await a.request('GET', '/wishes/wish_01aaaaaaaaaaaaaaaaaaaaaaaa'))
      assertNotFound(await a.request('GET', '/wishes/nope'))
    })

    // ---------------------------------------------------------------- list

    test('GET /wishes: default page, newest first, limit/offset echoed, total counts every match', async () => {
      const a = await t.account()
      const created: any[] = []
      for (let i = 0; i < 12; i++) {
        if (i % 3 === 0) t.clock.advance(1000)
        created.push(await create(a, { query: `wish ${i}` }))
      }
      const expected = newestFirst(created)
      assert.deepEqual(ids(expected), ids([...created].reverse()), 'newest first is reverse creation order')

      const first = await list(a)
      assert.deepEqual(first.meta, { total: 12, limit: 10, offset: 0 })
      assert.deepEqual(ids(first.data), ids(expected.slice(0, 10)))
      assert.deepEqual(first.data[0], await get(a, expected[0].id), 'list items are full wishes')

      const pages: string[] = []
      for (const offset of [0, 5, 10]) {
        const page = await list(a, `?limit=5&offset=${offset}`)
        assert.deepEqual(page.meta, { total: 12, limit: 5, offset })
        pages.push(...ids(page.data))
      }
      assert.deepEqual(pages, ids(expected))

      assert.deepEqual((await list(a, '?limit=100')).meta, { total: 12, limit: 100, offset: 0 })
      assert.equal((await list(a, '?limit=100')).data.length, 12)
      assert.deepEqual(ids((await list(a, '?limit=1')).data), [expected[0].id])
      const beyond = await list(a, '?offset=12')
      assert.deepEqual(beyond, { data: [], meta: { total: 12, limit: 10, offset: 12 } })
    })

    test('GET /wishes ties on created_at are broken by id desc', async () => {
      const a = await t.account()
      const created: any[] = []
      for (let i = 0; i < 6; i++) created.push(await create(a, { query: `w${i}` }))
      const listed = await list(a)
      assert.deepEqual(ids(listed.data), ids(newestFirst(created)))
      assert.deepEqual(ids(listed.data), ids([...created].reverse()))
    })

    test('GET /wishes status filter; total counts the filter, not the page', async () => {
      const a = await t.account()
      const active = [await wishIn(a, 'active'), await wishIn(a, 'active')]
      const pending = [await wishIn(a, 'pending'), await wishIn(a, 'pending'), await wishIn(a, 'pending')]
      const cancelled = [await wishIn(a, 'cancelled')]
      const fulfilled = [await wishIn(a, 'fulfilled')]

      const p = await list(a, '?status=pending')
      assert.deepEqual(p.meta, { total: 3, limit: 10, offset: 0 })
      assert.deepEqual(ids(p.data), ids(newestFirst(pending)))
      for (const w of p.data) assert.equal(w.status, 'pending')

      const pPage = await list(a, '?status=pending&limit=1&offset=1')
      assert.deepEqual(pPage.meta, { total: 3, limit: 1, offset: 1 })
      assert.deepEqual(ids(pPage.data), [newestFirst(pending)[1]!.id])

      assert.deepEqual(ids((await list(a, '?status=active')).data), ids(newestFirst(active)))
      assert.deepEqual(ids((await list(a, '?status=cancelled')).data), ids(cancelled))
      assert.deepEqual(ids((await list(a, '?status=fulfilled')).data), ids(fulfilled))
      assert.deepEqual(await list(a, '?status=expired'), { data: [], meta: { total: 0, limit: 10, offset: 0 } })
      assert.equal((await list(a)).meta.total, 7)
    })

    test('GET /wishes invalid query parameters are 400', async () => {
      const a = await t.account()
      await create(a)
      const cases: Array<[string, string, string]> = [
        ['?status=foo', 'status', 'parameter_invalid'],
        ['?status=ACTIVE', 'status', 'parameter_invalid'],
        ...PAGING_QUERY_CASES,
      ]
      for (const [qs, param, code] of cases) {
        const res = await a.request('GET', `/wishes${qs}`)
        assert.doesNotThrow(() => assertInvalid(res, param, code), `${qs}: ${res.raw}`)
      }
    })

    // ---------------------------------------------------------------- update

    test('PUT /wishes/:id is partial: only the members sent change', async () => {
      const a = await t.account()
      const w = await create(a, {
        query: 'a kettle', budget: { max: 50, currency: 'EUR' }, category: 'kitchen', metadata: { a: '1' }, expires_at: '2099-01-01T00:00:00.000Z',
      })
      t.clock.advance(1000)
      const res = await a.request('PUT', `/wishes/${w.id}`, { query: '  a steel kettle  ' })
      assert.equal(res.status, 200, res.raw)
      assert.equal(res.headers['api-version'], API_VERSION)
      assert.deepEqual(Object.keys(res.body), ['data'])
      const u = res.body.data
      assert.match(u.updated_at, ISO_MS)
      assert.ok(u.updated_at > w.updated_at, 'updated_at moved')
      assert.ok(u.updated_at <= t.clock.now().toISOString())
      assert.deepEqual(u, { ...w, query: 'a steel kettle', updated_at: u.updated_at })
      assert.deepEqual(await get(a, w.id), u)
    })

    test('PUT budget replaces the whole budget; null clears it', async () => {
      const a = await t.account()
      const w = await create(a, { query: 'q', budget: { max: 50, currency: 'EUR' } })
      assert.deepEqual((await update(a, w.id, { budget: { max: 75.5, currency: 'gbp' } })).budget, { max: 75.5, currency: 'GBP' })
      assert.deepEqual((await update(a, w.id, { budget: { currency: 'eur' } })).budget, { max: null, currency: 'EUR' })
      assert.deepEqual((await update(a, w.id, { budget: { max: 20 } })).budget, { max: 20, currency: 'USD' })
      assert.equal((await update(a, w.id, { budget: null })).budget, null)
      assert.equal((await get(a, w.id)).budget, null)
      assert.deepEqual((await update(a, w.id, { budget: { max: 500, currency: 'JPY' } })).budget, { max: 500, currency: 'JPY' })
    })

    test('PUT metadata is merged; a key set to null is removed; null clears all', async () => {
      const a = await t.account()
      const w = await create(a, { query: 'q', metadata: { a: '1', b: '2', n: '3' } })
      const merged = await update(a, w.id, { metadata: { b: null, c: 'three', flag: 'false' } })
      assert.deepEqual(merged.metadata, { a: '1', n: '3', c: 'three', flag: 'false' })
      assert.deepEqual((await get(a, w.id)).metadata, { a: '1', n: '3', c: 'three', flag: 'false' })
      assert.deepEqual((await update(a, w.id, { metadata: { a: 'one' } })).metadata, { a: 'one', n: '3', c: 'three', flag: 'false' })
      assert.deepEqual((await update(a, w.id, { metadata: null })).metadata, {})
      assert.deepEqual((await get(a, w.id)).metadata, {})
    })

    test('PUT metadata merge may not pass 50 keys', async () => {
      const a = await t.account()
      const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']))
      const w = await create(a, { query: 'q', metadata: fifty })
      assertInvalid(await a.request('PUT', `/wishes/${w.id}`, { metadata: { extra: 'v' } }), 'metadata')
      assert.deepEqual((await get(a, w.id)).metadata, fifty)
      const swapped = await update(a, w.id, { metadata: { k0: null, extra: 'v' } })
      assert.equal(Object.keys(swapped.metadata).length, 50)
      assert.equal(swapped.metadata.extra, 'v')
      assert.equal(swapped.metadata.k0, undefined)
    })

    test('PUT category and expires_at can be set and cleared with null', async () => {
      const a = await t.account()
      const w = await create(a, { query: 'q' })
      assert.equal((await update(a, w.id, { category: 'books' })).category, 'books')
      assert.equal((await update(a, w.id, { category: null })).category, null)
      const at = inFuture(t, 86_400_000)
      assert.equal((await update(a, w.id, { expires_at: at })).expires_at, at)
      assert.equal((await update(a, w.id, { expires_at: '2099-06-01T12:00:00+02:00' })).expires_at, '2099-06-01T10:00:00.000Z')
      const cleared = await update(a, w.id, { expires_at: null })
      assert.equal(cleared.expires_at, null)
      assert.equal(cleared.status, 'active')
      assert.deepEqual(await get(a, w.id), cleared)
    })

    test('PUT validation: 400 naming the member, and the wish is unchanged', async () => {
      const a = await t.account()
      const w = await create(a, { query: 'q', budget: { max: 10, currency: 'USD' }, metadata: { a: '1' } })
      const past = new Date(t.clock.now().getTime() - 1000).toISOString()
      const cases: Array<[unknown, string, string]> = [
        [{ query: '' }, 'query', 'parameter_invalid'],
        [{ query: '   ' }, 'query', 'parameter_invalid'],
        [{ query: 'x'.repeat(2001) }, 'query', 'parameter_invalid'],
        [{ query: null }, 'query', 'parameter_invalid'],
        [{ status: 'foo' }, 'status', 'parameter_invalid'],
        [{ budget: { max: -5 } }, 'budget.max', 'parameter_invalid'],
        [{ budget: { max: 1.001, currency: 'USD' } }, 'budget.max', 'parameter_invalid'],
        [{ budget: { max: 2.5, currency: 'JPY' } }, 'budget.max', 'parameter_invalid'],
        [{ budget: { currency: 'XYZ' } }, 'budget.currency', 'parameter_invalid'],
        [{ budget: { max: 1, extra: 1 } }, 'budget.extra', 'parameter_unknown'],
        [{ category: 'c'.repeat(101) }, 'category', 'parameter_invalid'],
        [{ metadata: { a: 'v'.repeat(501) } }, 'metadata.a', 'parameter_invalid'],
        [{ metadata: { ['k'.repeat(41)]: 'v' } }, `metadata.${'k'.repeat(41)}`, 'parameter_invalid'],
        [{ expires_at: past }, 'expires_at', 'parameter_invalid'],
        [{ expires_at: 'soon' }, 'expires_at', 'parameter_invalid'],
        [{ protocol: 'acp' }, 'protocol', 'parameter_unknown'],
        [{ created_at: '2020-01-01T00:00:00.000Z' }, 'created_at', 'parameter_unknown'],
        [{ id: 'wish_other' }, 'id', 'parameter_unknown'],
      ]
      for (const [body, param, code] of cases) {
        const res = await a.request('PUT', `/wishes/${w.id}`, body)
        assert.doesNotThrow(() => assertInvalid(res, param, code), `${JSON.stringify(body).slice(0, 80)}: ${res.raw}`)
      }
      assert.deepEqual(await get(a, w.id), w)
      assert.equal((await eventsOf(t, a.id, w.id)).length, 1)
    })

    test('PUT updated_at moves only when something changed', async () => {
      const a = await t.account()
      const expiresAt = '2099-03-04T05:06:07.000Z'
      const w = await create(a, {
        query: 'a kettle', budget: { max: 19.99, currency: 'USD' }, category: 'kitchen', metadata: { a: '1', n: '2' }, expires_at: expiresAt,
      })
      t.clock.advance(1000)
      const noops: unknown[] = [
        {},
        { query: 'a kettle' },
        { query: '  a kettle  ' },
        { budget: { max: 19.99, currency: 'usd' } },
        { category: 'kitchen' },
        { metadata: { a: '1' } },
        { metadata: { n: '2' } },
        { metadata: {} },
        { metadata: { missing: null } },
        { expires_at: expiresAt },
        { expires_at: '2099-03-04T05:06:07Z' },
        { status: 'active' },
        { query: 'a kettle', budget: { max: 19.99, currency: 'USD' }, category: 'kitchen', metadata: { a: '1', n: '2' }, expires_at: expiresAt, status: 'active' },
      ]
      for (const body of noops) {
        const res = await a.request('PUT', `/wishes/${w.id}`, body)
        assert.equal(res.status, 200, res.raw)
        assert.deepEqual(res.body.data, w, `no-op ${JSON.stringify(body)}`)
      }
      assert.deepEqual(await get(a, w.id), w)
      assert.equal((await eventsOf(t, a.id, w.id)).length, 1, 'no-op updates write no event')

      const changed = await update(a, w.id, { metadata: { a: '2' } })
      assert.ok(changed.updated_at > w.updated_at)
      assert.equal(changed.created_at, w.created_at)

      // Empty budget/category clear on a wish that has none is a no-op too.
      const bare = await create(a, { query: 'bare' })
      t.clock.advance(1000)
      for (const body of [{ budget: null }, { category: null }, { expires_at: null }, { metadata: null }]) {
        const res = await a.request('PUT', `/wishes/${bare.id}`, body)
        assert.equal(res.status, 200, res.raw)
        assert.deepEqual(res.body.data, bare, `no-op ${JSON.stringify(body)}`)
      }
      assert.equal((await eventsOf(t, a.id, bare.id)).length, 1)
    })

    // ---------------------------------------------------------------- transitions

    for (const from of STATUSES) {
      for (const to of STATUSES) {
        const allowed = from === to || ALLOWED[from].includes(to)
        const label = from === to ? 'no-op 200' : allowed ? '200' : '409'
        test(`status ${from} -> ${to}: ${label}`, async () => {
          const a = await t.account()
          const w = await wishIn(a, from)
          assert.equal(w.status, from)
          t.clock.advance(1000)
          const res = await a.request('PUT', `/wishes/${w.id}`, { status: to })
          if (from === to) {
            assert.equal(res.status, 200, res.raw)
            assert.deepEqual(res.body.data, w, 'setting the current status again changes nothing')
          } else if (allowed) {
            assert.equal(res.status, 200, res.raw)
            assert.deepEqual(res.body.data, { ...w, status: to, updated_at: res.body.data.updated_at })
            assert.ok(res.body.data.updated_at > w.updated_at)
          } else {
            const error = assertError(res, 409, 'conflict_error', 'invalid_state_transition', 'status')
            assert.ok(error.message.includes(from), `message names the current status: ${error.message}`)
            assert.match(error.message, /final|terminal/i, `message says no move is allowed: ${error.message}`)
            for (const s of STATUSES) {
              if (s !== from && s !== to) assert.ok(!error.message.includes(s), `message names no allowed status: ${error.message}`)
            }
            assert.deepEqual(await get(a, w.id), w)
          }
        })
      }
    }

    test('a wish can go active -> pending -> active -> pending', async () => {
      const a = await t.account()
      const w = await wishIn(a, 'pending')
      assert.equal((await update(a, w.id, { status: 'active' })).status, 'active')
      assert.equal((await update(a, w.id, { status: 'pending' })).status, 'pending')
    })

    for (const terminal of TERMINAL) {
      test(`a ${terminal} wish accepts metadata changes only`, async () => {
        const a = await t.account()
        const w = await wishIn(a, terminal, {
          query: 'q', budget: { max: 10, currency: 'USD' }, category: 'c', metadata: { a: '1' }, expires_at: '2099-01-01T00:00:00.000Z',
        })
        assert.equal(w.status, terminal)
        const blocked: Array<[Record<string, unknown>, string]> = [
          [{ query: 'another' }, 'query'],
          [{ budget: { max: 20, currency: 'USD' } }, 'budget'],
          [{ budget: null }, 'budget'],
          [{ category: 'd' }, 'category'],
          [{ category: null }, 'category'],
          [{ expires_at: '2099-02-01T00:00:00.000Z' }, 'expires_at'],
          [{ expires_at: null }, 'expires_at'],
          [{ status: 'active' }, 'status'],
          [{ status: 'pending' }, 'status'],
        ]
        for (const [body, param] of blocked) {
          const res = await a.request('PUT', `/wishes/${w.id}`, body)
          assert.doesNotThrow(() => assertError(res, 409, 'conflict_error', 'invalid_state_transition', param), `${JSON.stringify(body)}: ${res.raw}`)
        }
        // A forbidden member fails the whole request: the metadata sent with it is not applied.
        const mixed = await a.request('PUT', `/wishes/${w.id}`, { query: 'another', metadata: { b: '2' } })
        assertError(mixed, 409, 'conflict_error', 'invalid_state_transition')
        assert.deepEqual(await get(a, w.id), w)
        assert.equal((await eventsOf(t, a.id, w.id)).length, 2, 'refused changes write no event')

        t.clock.advance(1000)
        const meta = await update(a, w.id, { metadata: { b: '2', a: null } })
        assert.deepEqual(meta, { ...w, metadata: { b: '2' }, updated_at: meta.updated_at })
        assert.ok(meta.updated_at > w.updated_at)
        assert.deepEqual((await update(a, w.id, { metadata: null })).metadata, {})
      })
    }

    // ---------------------------------------------------------------- expiry

    test('a wish past expires_at reads expired on GET and in lists', async () => {
      const a = await t.account()
      const lapsing = await create(a, { query: 'lapsing', expires_at: inFuture(t, 60_000) })
      const pendingLapsing = await wishIn(a, 'pending', { query: 'pending lapsing', expires_at: inFuture(t, 60_000) })
      const lasting = await create(a, { query: 'lasting', expires_at: inFuture(t, 3_600_000) })
      const forever = await create(a, { query: 'forever' })

      assert.equal((await get(a, lapsing.id)).status, 'active')
      assert.deepEqual(ids((await list(a, '?status=active')).data), [forever.id, lasting.id, lapsing.id])
      assert.equal((await list(a, '?status=expired')).meta.total, 0)

      t.clock.advance(61_000)

      const read = await get(a, lapsing.id)
      assert.deepEqual(read, { ...lapsing, status: 'expired' })
      assert.equal((await get(a, pendingLapsing.id)).status, 'expired')
      assert.equal((await get(a, lasting.id)).status, 'active')

      const expired = await list(a, '?status=expired')
      assert.deepEqual(expired.meta, { total: 2, limit: 10, offset: 0 })
      assert.deepEqual(ids(expired.data), [pendingLapsing.id, lapsing.id])
      for (const w of expired.data) assert.equal(w.status, 'expired')

      const active = await list(a, '?status=active')
      assert.deepEqual(ids(active.data), [forever.id, lasting.id])
      assert.equal(active.meta.total, 2)
      assert.deepEqual(await list(a, '?status=pending'), { data: [], meta: { total: 0, limit: 10, offset: 0 } })

      const all = await list(a)
      assert.equal(all.meta.total, 4)
      const statusById = Object.fromEntries(all.data.map((w: any) => [w.id, w.status]))
      assert.deepEqual(statusById, { [lapsing.id]: 'expired', [pendingLapsing.id]: 'expired', [lasting.id]: 'active', [forever.id]: 'active' })
    })

    test('a wish that lapsed is terminal: metadata only', async () => {
      const a = await t.account()
      const w = await create(a, { query: 'q', category: 'c', budget: { max: 5 }, expires_at: inFuture(t, 30_000) })
      t.clock.advance(31_000)
      const lapsed = await get(a, w.id)
      assert.equal(lapsed.status, 'expired')

      for (const [body, param] of [
        [{ query: 'other' }, 'query'],
        [{ budget: null }, 'budget'],
        [{ category: 'd' }, 'category'],
        [{ expires_at: inFuture(t, 3_600_000) }, 'expires_at'],
        [{ expires_at: null }, 'expires_at'],
        [{ status: 'active' }, 'status'],
        [{ status: 'pending' }, 'status'],
        [{ status: 'fulfilled' }, 'status'],
        [{ status: 'cancelled' }, 'status'],
      ] as Array<[Record<string, unknown>, string]>) {
        const res = await a.request('PUT', `/wishes/${w.id}`, body)
        assert.doesNotThrow(() => assertError(res, 409, 'conflict_error', 'invalid_state_transition', param), `${JSON.stringify(body)}: ${res.raw}`)
      }
      const same = await a.request('PUT', `/wishes/${w.id}`, { status: 'expired' })
      assert.equal(same.status, 200, same.raw)
      assert.deepEqual(same.body.data, lapsed)

      const meta = await update(a, w.id, { metadata: { note: 'late' } })
      assert.deepEqual(meta, { ...lapsed, metadata: { note: 'late' }, updated_at: meta.updated_at })
      assert.ok(meta.updated_at > w.updated_at)
      assert.deepEqual(await get(a, w.id), meta)
      assert.deepEqual(ids((await list(a, '?status=expired')).data), [w.id])
    })

    test('PUT expires_at on an open wish must be in the future', async () => {
      const a = await t.account()
      const w = await create(a)
      assertInvalid(await a.request('PUT', `/wishes/${w.id}`, { expires_at: new Date(t.clock.now().getTime() - 1).toISOString() }), 'expires_at')
      assert.deepEqual(await get(a, w.id), w)
    })

    // ---------------------------------------------------------------- delete

    test('DELETE 204 with an empty body; afterwards GET, PUT, DELETE give 404', async () => {
      const a = await t.account()
      const keep = await create(a, { query: 'keep' })
      const w = await create(a, { query: 'doomed' })
      const res = await a.request('DELETE', `/wishes/${w.id}`)
      assert.equal(res.status, 204)
      assert.equal(res.raw, '')
      assertEnvelopeHeaders(res)
      assertNotFound(await a.request('GET', `/wishes/${w.id}`))
      assertNotFound(await a.request('PUT', `/wishes/${w.id}`, { query: 'back' }))
      assertNotFound(await a.request('PUT', `/wishes/${w.id}`, {}))
      assertNotFound(await a.request('DELETE', `/wishes/${w.id}`))
      assert.deepEqual(await list(a), { data: [keep], meta: { total: 1, limit: 10, offset: 0 } })
    })

    test('DELETE works on a terminal wish too', async () => {
      const a = await t.account()
      const w = await wishIn(a, 'cancelled')
      assert.equal((await a.request('DELETE', `/wishes/${w.id}`)).status, 204)
      assertNotFound(await a.request('GET', `/wishes/${w.id}`))
    })

    // ---------------------------------------------------------------- accounts and keys

    test("another account's wish is 404 on GET, PUT, DELETE and never listed", async () => {
      const a = await t.account()
      const b = await t.account()
      const w = await create(a, { query: 'mine', metadata: { a: '1' } })
      const own = await create(b, { query: 'theirs' })
      assertNotFound(await b.request('GET', `/wishes/${w.id}`))
      assertNotFound(await b.request('GET', `/wishes/${w.id}`, undefined, { key: b.readKey }))
      assertNotFound(await b.request('PUT', `/wishes/${w.id}`, { metadata: { b: '2' } }))
      assertNotFound(await b.request('PUT', `/wishes/${w.id}`, { status: 'cancelled' }))
      assertNotFound(await b.request('DELETE', `/wishes/${w.id}`))
      assert.deepEqual(await list(b), { data: [own], meta: { total: 1, limit: 10, offset: 0 } })
      assert.deepEqual(ids((await list(b, '?status=active')).data), [own.id])
      assert.deepEqual(await get(a, w.id), w, 'untouched by the other account')
      assert.equal((await eventsOf(t, b.id, w.id)).length, 0)
      assert.equal((await eventsOf(t, a.id, w.id)).length, 1)
    })

    test('a read key can GET but gets 403 insufficient_scope on POST, PUT, DELETE', async () => {
      const a = await t.account()
      const w = await create(a, { query: 'q' })
      const read = { key: a.readKey }
      const one = await a.request('GET', `/wishes/${w.id}`, undefined, read)
      assert.equal(one.status, 200, one.raw)
      assert.deepEqual(one.body.data, w)
      const listed = await a.request('GET', '/wishes', undefined, read)
      assert.equal(listed.status, 200, listed.raw)
      assert.deepEqual(ids(listed.body.data), [w.id])

      assertError(await a.request('POST', '/wishes', { query: 'q' }, read), 403, 'permission_error', 'insufficient_scope')
      assertError(await a.request('PUT', `/wishes/${w.id}`, { query: 'changed' }, read), 403, 'permission_error', 'insufficient_scope')
      assertError(await a.request('DELETE', `/wishes/${w.id}`, undefined, read), 403, 'permission_error', 'insufficient_scope')
      assert.deepEqual(await get(a, w.id), w)
      assert.equal((await list(a)).meta.total, 1)
      assert.equal(await countEvents(t, a.id), 1)
    })

    // ---------------------------------------------------------------- events

    test('each create, update and delete writes exactly one event with the response object', async () => {
      const a = await t.account()
      const created = await a.request('POST', '/wishes', { query: 'q', budget: { max: 9.99, currency: 'eur' }, metadata: { a: '1' } })
      assert.equal(created.status, 201)
      const w = created.body.data
      let events = await eventsOf(t, a.id, w.id)
      assert.equal(events.length, 1)
      assert.equal(events[0]!.type, 'wish.created')
      assert.match(events[0]!.id, /^evt_/)
      assert.match(events[0]!.created_at, ISO_MS)
      assert.equal(events[0]!.request_id, requestIdOf(created))
      assert.deepEqual(events[0]!.data, { object: w })

      t.clock.advance(1000)
      const updated = await a.request('PUT', `/wishes/${w.id}`, { status: 'pending', metadata: { b: '2' } })
      assert.equal(updated.status, 200)
      events = await eventsOf(t, a.id, w.id)
      assert.equal(events.length, 2)
      assert.equal(events[1]!.type, 'wish.updated')
      assert.equal(events[1]!.request_id, requestIdOf(updated))
      assert.deepEqual(events[1]!.data, { object: updated.body.data })

      // No-op, refused and invalid updates write nothing.
      assert.equal((await a.request('PUT', `/wishes/${w.id}`, {})).status, 200)
      assert.equal((await a.request('PUT', `/wishes/${w.id}`, { status: 'pending', metadata: { b: '2' } })).status, 200)
      assert.equal((await a.request('PUT', `/wishes/${w.id}`, { query: '' })).status, 400)
      assert.equal((await eventsOf(t, a.id, w.id)).length, 2)

      const last = await get(a, w.id)
      const deleted = await a.request('DELETE', `/wishes/${w.id}`)
      assert.equal(deleted.status, 204)
      events = await eventsOf(t, a.id, w.id)
      assert.equal(events.length, 3)
      assert.equal(events[2]!.type, 'wish.deleted')
      assert.equal(events[2]!.request_id, requestIdOf(deleted))
      assert.deepEqual(events[2]!.data, { object: last })
      assert.equal(await countEvents(t, a.id), 3)
    })

    test('updating a terminal wish to refused states writes no event; a metadata change writes one', async () => {
      const a = await t.account()
      const w = await wishIn(a, 'fulfilled')
      assert.equal((await eventsOf(t, a.id, w.id)).length, 2)
      assert.equal((await a.request('PUT', `/wishes/${w.id}`, { status: 'active' })).status, 409)
      assert.equal((await eventsOf(t, a.id, w.id)).length, 2)
      const res = await a.request('PUT', `/wishes/${w.id}`, { metadata: { k: 'v' } })
      assert.equal(res.status, 200)
      const events = await eventsOf(t, a.id, w.id)
      assert.deepEqual(events.map((e) => e.type), ['wish.created', 'wish.updated', 'wish.updated'])
      assert.deepEqual(events[2]!.data, { object: res.body.data })
      assert.equal(events[2]!.request_id, requestIdOf(res))
    })

    // ---------------------------------------------------------------- concurrency

    test('20 concurrent PUTs adding different metadata keys lose no update', async () => {
      const a = await t.account()
      const w = await create(a, { query: 'q', metadata: { base: 'yes' } })
      const responses = await Promise.all(Array.from({ length: 20 }, (_, i) =>
        a.request('PUT', `/wishes/${w.id}`, { metadata: { [`key${i}`]: `value${i}` } })))
      responses.forEach((res, i) => {
        assert.equal(res.status, 200, res.raw)
        assert.equal(res.body.data.metadata[`key${i}`], `value${i}`)
        assert.equal(res.body.data.metadata.base, 'yes')
      })
      const expected = { base: 'yes', ...Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`key${i}`, `value${i}`])) }
      const final = await get(a, w.id)
      assert.deepEqual(final.metadata, expected)
      // Each response saw every earlier update: their key counts are 2..21, each once.
      assert.deepEqual(responses.map((r) => Object.keys(r.body.data.metadata).length).sort((x, y) => x - y),
        Array.from({ length: 20 }, (_, i) => i + 2))
      const events = await eventsOf(t, a.id, w.id)
      assert.equal(events.length, 21)
      assert.equal(events.filter((e) => e.type === 'wish.updated').length, 20)
    })
  })
}
