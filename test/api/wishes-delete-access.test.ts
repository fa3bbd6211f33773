import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { assertEnvelopeHeaders, assertError, assertNotFound, ids } from '../helpers/assertions.js'
import { countEvents, createWish, eventsOf } from '../helpers/fixtures.js'
import { getWish, listWishes, wishIn } from '../helpers/wishes.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Wishes through HTTP, on every store: contract section 4 and the list rules of section 1,
 * with the error envelope of section 2. This file: deleting a wish, and which accounts and keys may touch it.
 */

for (const kind of storeKinds()) {
  describe(`wishes: delete, accounts and keys (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    // ---------------------------------------------------------------- delete

    test('DELETE 204 with an empty body; afterwards GET, PUT, DELETE give 404', async () => {
      const a = await t.account()
      const keep = await createWish(a, { query: 'keep' })
      const w = await createWish(a, { query: 'doomed' })
      const res = await a.request('DELETE', `/wishes/${w.id}`)
      assert.equal(res.status, 204)
      assert.equal(res.raw, '')
      assertEnvelopeHeaders(res)
      assertNotFound(await a.request('GET', `/wishes/${w.id}`))
      assertNotFound(await a.request('PUT', `/wishes/${w.id}`, { query: 'back' }))
      assertNotFound(await a.request('PUT', `/wishes/${w.id}`, {}))
      assertNotFound(await a.request('DELETE', `/wishes/${w.id}`))
      assert.deepEqual(await listWishes(a), { data: [keep], meta: { total: 1, limit: 10, offset: 0, has_more: false } })
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
      const w = await createWish(a, { query: 'mine', metadata: { a: '1' } })
      const own = await createWish(b, { query: 'theirs' })
      assertNotFound(await b.request('GET', `/wishes/${w.id}`))
      assertNotFound(await b.request('GET', `/wishes/${w.id}`, undefined, { key: b.readKey }))
      assertNotFound(await b.request('PUT', `/wishes/${w.id}`, { metadata: { b: '2' } }))
      assertNotFound(await b.request('PUT', `/wishes/${w.id}`, { status: 'cancelled' }))
      assertNotFound(await b.request('DELETE', `/wishes/${w.id}`))
      assert.deepEqual(await listWishes(b), { data: [own], meta: { total: 1, limit: 10, offset: 0, has_more: false } })
      assert.deepEqual(ids((await listWishes(b, '?status=active')).data), [own.id])
      assert.deepEqual(await getWish(a, w.id), w, 'untouched by the other account')
      assert.equal((await eventsOf(t, b.id, w.id)).length, 0)
      assert.equal((await eventsOf(t, a.id, w.id)).length, 1)
    })

    test('a read key can GET but gets 403 insufficient_scope on POST, PUT, DELETE', async () => {
      const a = await t.account()
      const w = await createWish(a, { query: 'q' })
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
      assert.deepEqual(await getWish(a, w.id), w)
      assert.equal((await listWishes(a)).meta.total, 1)
      assert.equal(await countEvents(t, a.id), 1)
    })
  })
}
