import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { assertEnvelopeHeaders, assertError, assertInvalid, ISO_MS, requestIdOf } from '../helpers/assertions.js'
import { countEvents, createWish, inFuture } from '../helpers/fixtures.js'
import { getWish, listWishes } from '../helpers/wishes.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Wishes through HTTP, on every store: contract section 4 and the list rules of section 1,
 * with the error envelope of section 2. This file: creating a wish (POST /wishes): defaults, normalisation, validation.
 */

const WISH_ID = /^wish_[0-9A-Za-z]{16,}$/

for (const kind of storeKinds()) {
  describe(`wishes: create (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

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
      assert.deepEqual(await getWish(a, w.id), w)
    })

    test('POST /wishes defaults: budget null, protocol ap2, category null, metadata {}, expires_at null', async () => {
      const a = await t.account()
      const w = await createWish(a, { query: 'a kettle' })
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
      const other = await createWish(a, { query: 'a kettle' })
      assert.notEqual(other.id, w.id)
      const explicitNulls = await createWish(a, { query: 'x', budget: null, category: null, expires_at: null })
      assert.equal(explicitNulls.budget, null)
      assert.equal(explicitNulls.category, null)
      assert.equal(explicitNulls.expires_at, null)
    })

    test('POST /wishes budget: currency defaults to USD and is upper-cased; max may be absent', async () => {
      const a = await t.account()
      assert.deepEqual((await createWish(a, { query: 'q', budget: { currency: 'eur' } })).budget, { max: null, currency: 'EUR' })
      assert.deepEqual((await createWish(a, { query: 'q', budget: { max: 50 } })).budget, { max: 50, currency: 'USD' })
      assert.deepEqual((await createWish(a, { query: 'q', budget: { max: 0, currency: 'GBP' } })).budget, { max: 0, currency: 'GBP' })
      assert.deepEqual((await createWish(a, { query: 'q', budget: { max: 1000, currency: 'jpy' } })).budget, { max: 1000, currency: 'JPY' })
      assert.deepEqual((await createWish(a, { query: 'q', budget: { max: 1.234, currency: 'KWD' } })).budget, { max: 1.234, currency: 'KWD' })
    })

    test('POST /wishes protocol: auto -> ap2 by default, explicit ap2 and acp kept', async () => {
      const a = await t.account()
      assert.equal((await createWish(a, { query: 'q', protocol: 'auto' })).protocol, 'ap2')
      assert.equal((await createWish(a, { query: 'q' })).protocol, 'ap2')
      assert.equal((await createWish(a, { query: 'q', protocol: 'acp' })).protocol, 'acp')
      assert.equal((await createWish(a, { query: 'q', protocol: 'ap2' })).protocol, 'ap2')
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
      const w = await createWish(a, { query: 'q', expires_at: '2099-01-01T12:00:00+02:00' })
      assert.equal(w.expires_at, '2099-01-01T10:00:00.000Z')
      assert.equal(w.status, 'active')
      const soon = inFuture(t, 3_600_000)
      assert.equal((await createWish(a, { query: 'q', expires_at: soon })).expires_at, soon)
    })

    test('POST /wishes accepts the upper bounds', async () => {
      const a = await t.account()
      assert.equal((await createWish(a, { query: 'x'.repeat(2000) })).query, 'x'.repeat(2000))
      assert.equal((await createWish(a, { query: 'q', category: 'c'.repeat(100) })).category, 'c'.repeat(100))
      const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, `v${i}`]))
      assert.deepEqual((await createWish(a, { query: 'q', metadata: fifty })).metadata, fifty)
      const wide = { ['k'.repeat(40)]: 'v'.repeat(500) }
      assert.deepEqual((await createWish(a, { query: 'q', metadata: wide })).metadata, wide)
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
      const listed = await listWishes(a)
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
      assert.equal((await listWishes(a)).meta.total, 0)
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
      assert.equal((await listWishes(a)).meta.total, 0)
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
      assert.equal((await listWishes(a)).meta.total, 0)
    })
  })
}
