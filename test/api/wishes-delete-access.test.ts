import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertEnvelopeHeaders, assertError, assertNotFound, ids } from '../helpers/assertions.js'
import { countEvents, createWish, eventsOf, getData, getList } from '../helpers/fixtures.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Wishes through HTTP, on every store: contract section 4 and the list rules of section 1,
 * with the error envelope of section 2. This file: deleting a wish, and which accounts and keys may touch it.
 */

type Status = 'active' | 'pending' | 'fulfilled' | 'cancelled' | 'expired'

for (const kind of storeKinds()) {
  describe(`wishes: delete, accounts and keys (${kind.name})`, () => {
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
  })
}
