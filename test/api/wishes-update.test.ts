import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { API_VERSION, assertError, assertInvalid, ids, ISO_MS } from '../helpers/assertions.js'
import { createWish, eventsOf, inFuture } from '../helpers/fixtures.js'
import { getWish, listWishes, updateWish, wishIn } from '../helpers/wishes.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Wishes through HTTP, on every store: contract section 4 and the list rules of section 1,
 * with the error envelope of section 2. This file: updating a wish (PUT /wishes/:id): partial updates, status transitions, expiry, concurrent updates.
 */

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
  describe(`wishes: update, transitions, expiry (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    // ---------------------------------------------------------------- update

    test('PUT /wishes/:id is partial: only the members sent change', async () => {
      const a = await t.account()
      const w = await createWish(a, {
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
      assert.deepEqual(await getWish(a, w.id), u)
    })

    test('PUT budget replaces the whole budget; null clears it', async () => {
      const a = await t.account()
      const w = await createWish(a, { query: 'q', budget: { max: 50, currency: 'EUR' } })
      assert.deepEqual((await updateWish(a, w.id, { budget: { max: 75.5, currency: 'gbp' } })).budget, { max: 75.5, currency: 'GBP' })
      assert.deepEqual((await updateWish(a, w.id, { budget: { currency: 'eur' } })).budget, { max: null, currency: 'EUR' })
      assert.deepEqual((await updateWish(a, w.id, { budget: { max: 20 } })).budget, { max: 20, currency: 'USD' })
      assert.equal((await updateWish(a, w.id, { budget: null })).budget, null)
      assert.equal((await getWish(a, w.id)).budget, null)
      assert.deepEqual((await updateWish(a, w.id, { budget: { max: 500, currency: 'JPY' } })).budget, { max: 500, currency: 'JPY' })
    })

    test('PUT metadata is merged; a key set to null is removed; null clears all', async () => {
      const a = await t.account()
      const w = await createWish(a, { query: 'q', metadata: { a: '1', b: '2', n: '3' } })
      const merged = await updateWish(a, w.id, { metadata: { b: null, c: 'three', flag: 'false' } })
      assert.deepEqual(merged.metadata, { a: '1', n: '3', c: 'three', flag: 'false' })
      assert.deepEqual((await getWish(a, w.id)).metadata, { a: '1', n: '3', c: 'three', flag: 'false' })
      assert.deepEqual((await updateWish(a, w.id, { metadata: { a: 'one' } })).metadata, { a: 'one', n: '3', c: 'three', flag: 'false' })
      assert.deepEqual((await updateWish(a, w.id, { metadata: null })).metadata, {})
      assert.deepEqual((await getWish(a, w.id)).metadata, {})
    })

    test('PUT metadata merge may not pass 50 keys', async () => {
      const a = await t.account()
      const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']))
      const w = await createWish(a, { query: 'q', metadata: fifty })
      assertInvalid(await a.request('PUT', `/wishes/${w.id}`, { metadata: { extra: 'v' } }), 'metadata')
      assert.deepEqual((await getWish(a, w.id)).metadata, fifty)
      const swapped = await updateWish(a, w.id, { metadata: { k0: null, extra: 'v' } })
      assert.equal(Object.keys(swapped.metadata).length, 50)
      assert.equal(swapped.metadata.extra, 'v')
      assert.equal(swapped.metadata.k0, undefined)
    })

    test('PUT category and expires_at can be set and cleared with null', async () => {
      const a = await t.account()
      const w = await createWish(a, { query: 'q' })
      assert.equal((await updateWish(a, w.id, { category: 'books' })).category, 'books')
      assert.equal((await updateWish(a, w.id, { category: null })).category, null)
      const at = inFuture(t, 86_400_000)
      assert.equal((await updateWish(a, w.id, { expires_at: at })).expires_at, at)
      assert.equal((await updateWish(a, w.id, { expires_at: '2099-06-01T12:00:00+02:00' })).expires_at, '2099-06-01T10:00:00.000Z')
      const cleared = await updateWish(a, w.id, { expires_at: null })
      assert.equal(cleared.expires_at, null)
      assert.equal(cleared.status, 'active')
      assert.deepEqual(await getWish(a, w.id), cleared)
    })

    test('PUT validation: 400 naming the member, and the wish is unchanged', async () => {
      const a = await t.account()
      const w = await createWish(a, { query: 'q', budget: { max: 10, currency: 'USD' }, metadata: { a: '1' } })
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
      assert.deepEqual(await getWish(a, w.id), w)
      assert.equal((await eventsOf(t, a.id, w.id)).length, 1)
    })

    test('PUT updated_at moves only when something changed', async () => {
      const a = await t.account()
      const expiresAt = '2099-03-04T05:06:07.000Z'
      const w = await createWish(a, {
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
      assert.deepEqual(await getWish(a, w.id), w)
      assert.equal((await eventsOf(t, a.id, w.id)).length, 1, 'no-op updates write no event')

      const changed = await updateWish(a, w.id, { metadata: { a: '2' } })
      assert.ok(changed.updated_at > w.updated_at)
      assert.equal(changed.created_at, w.created_at)

      // Empty budget/category clear on a wish that has none is a no-op too.
      const bare = await createWish(a, { query: 'bare' })
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
            assert.deepEqual(await getWish(a, w.id), w)
          }
        })
      }
    }

    test('a wish can go active -> pending -> active -> pending', async () => {
      const a = await t.account()
      const w = await wishIn(a, 'pending')
      assert.equal((await updateWish(a, w.id, { status: 'active' })).status, 'active')
      assert.equal((await updateWish(a, w.id, { status: 'pending' })).status, 'pending')
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
        assert.deepEqual(await getWish(a, w.id), w)
        assert.equal((await eventsOf(t, a.id, w.id)).length, 2, 'refused changes write no event')

        t.clock.advance(1000)
        const meta = await updateWish(a, w.id, { metadata: { b: '2', a: null } })
        assert.deepEqual(meta, { ...w, metadata: { b: '2' }, updated_at: meta.updated_at })
        assert.ok(meta.updated_at > w.updated_at)
        assert.deepEqual((await updateWish(a, w.id, { metadata: null })).metadata, {})
      })
    }

    // ---------------------------------------------------------------- expiry

    test('a wish past expires_at reads expired on GET and in lists', async () => {
      const a = await t.account()
      const lapsing = await createWish(a, { query: 'lapsing', expires_at: inFuture(t, 60_000) })
      const pendingLapsing = await wishIn(a, 'pending', { query: 'pending lapsing', expires_at: inFuture(t, 60_000) })
      const lasting = await createWish(a, { query: 'lasting', expires_at: inFuture(t, 3_600_000) })
      const forever = await createWish(a, { query: 'forever' })

      assert.equal((await getWish(a, lapsing.id)).status, 'active')
      assert.deepEqual(ids((await listWishes(a, '?status=active')).data), [forever.id, lasting.id, lapsing.id])
      assert.equal((await listWishes(a, '?status=expired')).meta.total, 0)

      t.clock.advance(61_000)

      const read = await getWish(a, lapsing.id)
      assert.deepEqual(read, { ...lapsing, status: 'expired' })
      assert.equal((await getWish(a, pendingLapsing.id)).status, 'expired')
      assert.equal((await getWish(a, lasting.id)).status, 'active')

      const expired = await listWishes(a, '?status=expired')
      assert.deepEqual(expired.meta, { total: 2, limit: 10, offset: 0, has_more: false })
      assert.deepEqual(ids(expired.data), [pendingLapsing.id, lapsing.id])
      for (const w of expired.data) assert.equal(w.status, 'expired')

      const active = await listWishes(a, '?status=active')
      assert.deepEqual(ids(active.data), [forever.id, lasting.id])
      assert.equal(active.meta.total, 2)
      assert.deepEqual(await listWishes(a, '?status=pending'), { data: [], meta: { total: 0, limit: 10, offset: 0, has_more: false } })

      const all = await listWishes(a)
      assert.equal(all.meta.total, 4)
      const statusById = Object.fromEntries(all.data.map((w: any) => [w.id, w.status]))
      assert.deepEqual(statusById, { [lapsing.id]: 'expired', [pendingLapsing.id]: 'expired', [lasting.id]: 'active', [forever.id]: 'active' })
    })

    test('a wish that lapsed is terminal: metadata only', async () => {
      const a = await t.account()
      const w = await createWish(a, { query: 'q', category: 'c', budget: { max: 5 }, expires_at: inFuture(t, 30_000) })
      t.clock.advance(31_000)
      const lapsed = await getWish(a, w.id)
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

      const meta = await updateWish(a, w.id, { metadata: { note: 'late' } })
      assert.deepEqual(meta, { ...lapsed, metadata: { note: 'late' }, updated_at: meta.updated_at })
      assert.ok(meta.updated_at > w.updated_at)
      assert.deepEqual(await getWish(a, w.id), meta)
      assert.deepEqual(ids((await listWishes(a, '?status=expired')).data), [w.id])
    })

    test('PUT expires_at on an open wish must be in the future', async () => {
      const a = await t.account()
      const w = await createWish(a)
      assertInvalid(await a.request('PUT', `/wishes/${w.id}`, { expires_at: new Date(t.clock.now().getTime() - 1).toISOString() }), 'expires_at')
      assert.deepEqual(await getWish(a, w.id), w)
    })

    // ---------------------------------------------------------------- concurrency

    test('20 concurrent PUTs adding different metadata keys lose no update', async () => {
      const a = await t.account()
      const w = await createWish(a, { query: 'q', metadata: { base: 'yes' } })
      const responses = await Promise.all(Array.from({ length: 20 }, (_, i) =>
        a.request('PUT', `/wishes/${w.id}`, { metadata: { [`key${i}`]: `value${i}` } })))
      responses.forEach((res, i) => {
        assert.equal(res.status, 200, res.raw)
        assert.equal(res.body.data.metadata[`key${i}`], `value${i}`)
        assert.equal(res.body.data.metadata.base, 'yes')
      })
      const expected = { base: 'yes', ...Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`key${i}`, `value${i}`])) }
      const final = await getWish(a, w.id)
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
