import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { assertEnvelopeHeaders, assertInvalid, assertNotFound, ids, newestFirst, PAGING_QUERY_CASES } from '../helpers/assertions.js'
import { createWish } from '../helpers/fixtures.js'
import { getWish, listWishes, wishIn } from '../helpers/wishes.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Wishes through HTTP, on every store: contract section 4 and the list rules of section 1,
 * with the error envelope of section 2. This file: reading a wish and listing wishes (GET /wishes/:id, GET /wishes).
 */

for (const kind of storeKinds()) {
  describe(`wishes: read and list (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    // ---------------------------------------------------------------- read

    test('GET /wishes/:id 200 {data}; unknown id 404 resource_missing', async () => {
      const a = await t.account()
      const w = await createWish(a, { query: 'a kettle', metadata: { a: '1' } })
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
        created.push(await createWish(a, { query: `wish ${i}` }))
      }
      const expected = newestFirst(created)
      assert.deepEqual(ids(expected), ids([...created].reverse()), 'newest first is reverse creation order')

      const first = await listWishes(a)
      assert.deepEqual(first.meta, { total: 12, limit: 10, offset: 0, has_more: true })
      assert.deepEqual(ids(first.data), ids(expected.slice(0, 10)))
      assert.deepEqual(first.data[0], await getWish(a, expected[0].id), 'list items are full wishes')

      const pages: string[] = []
      for (const offset of [0, 5, 10]) {
        const page = await listWishes(a, `?limit=5&offset=${offset}`)
        assert.deepEqual(page.meta, { total: 12, limit: 5, offset, has_more: offset + 5 < 12 })
        pages.push(...ids(page.data))
      }
      assert.deepEqual(pages, ids(expected))

      assert.deepEqual((await listWishes(a, '?limit=100')).meta, { total: 12, limit: 100, offset: 0, has_more: false })
      assert.equal((await listWishes(a, '?limit=100')).data.length, 12)
      assert.deepEqual(ids((await listWishes(a, '?limit=1')).data), [expected[0].id])
      const beyond = await listWishes(a, '?offset=12')
      assert.deepEqual(beyond, { data: [], meta: { total: 12, limit: 10, offset: 12, has_more: false } })
    })

    test('GET /wishes ties on created_at are broken by id desc', async () => {
      const a = await t.account()
      const created: any[] = []
      for (let i = 0; i < 6; i++) created.push(await createWish(a, { query: `w${i}` }))
      const listed = await listWishes(a)
      assert.deepEqual(ids(listed.data), ids(newestFirst(created)))
      assert.deepEqual(ids(listed.data), ids([...created].reverse()))
    })

    test('GET /wishes status filter; total counts the filter, not the page', async () => {
      const a = await t.account()
      const active = [await wishIn(a, 'active'), await wishIn(a, 'active')]
      const pending = [await wishIn(a, 'pending'), await wishIn(a, 'pending'), await wishIn(a, 'pending')]
      const cancelled = [await wishIn(a, 'cancelled')]
      const fulfilled = [await wishIn(a, 'fulfilled')]

      const p = await listWishes(a, '?status=pending')
      assert.deepEqual(p.meta, { total: 3, limit: 10, offset: 0, has_more: false })
      assert.deepEqual(ids(p.data), ids(newestFirst(pending)))
      for (const w of p.data) assert.equal(w.status, 'pending')

      const pPage = await listWishes(a, '?status=pending&limit=1&offset=1')
      assert.deepEqual(pPage.meta, { total: 3, limit: 1, offset: 1, has_more: true })
      assert.deepEqual(ids(pPage.data), [newestFirst(pending)[1]!.id])

      assert.deepEqual(ids((await listWishes(a, '?status=active')).data), ids(newestFirst(active)))
      assert.deepEqual(ids((await listWishes(a, '?status=cancelled')).data), ids(cancelled))
      assert.deepEqual(ids((await listWishes(a, '?status=fulfilled')).data), ids(fulfilled))
      assert.deepEqual(await listWishes(a, '?status=expired'), { data: [], meta: { total: 0, limit: 10, offset: 0, has_more: false } })
      assert.equal((await listWishes(a)).meta.total, 7)
    })

    test('GET /wishes invalid query parameters are 400', async () => {
      const a = await t.account()
      await createWish(a)
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
  })
}
