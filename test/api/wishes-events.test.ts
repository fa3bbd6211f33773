import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { ISO_MS, requestIdOf } from '../helpers/assertions.js'
import { countEvents, eventsOf } from '../helpers/fixtures.js'
import { getWish, wishIn } from '../helpers/wishes.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Wishes through HTTP, on every store: contract section 4 and the list rules of section 1,
 * with the error envelope of section 2. This file: the events each create, update and delete writes.
 */

for (const kind of storeKinds()) {
  describe(`wishes: events (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

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

      const last = await getWish(a, w.id)
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
  })
}
