import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * POST /wishes on PostgreSQL without an Idempotency-Key writes its rows in a statement batch's shared
 * transaction, in one round trip with other wishes (modules/wishes/service.ts); with a key, in the
 * request's transaction. Both must write the same rows: the wish, its count, its event, a delivery for
 * each endpoint that wants it; and many at once must neither deadlock nor count a wish twice. On SQLite
 * both requests take the transaction, and the test holds as well.
 */

for (const kind of storeKinds()) {
  describe(`POST /wishes writes the same rows with and without an idempotency key (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind, { WEBHOOK_ALLOW_PRIVATE: 'true' }) })
    after(async () => { await t.close() })

    const db = () => t.store.db.kysely

    /** What creating the wish wrote, with ids and times left out. */
    async function footprint(a: TestAccount, wishId: string) {
      const wish = await db().selectFrom('wishes').selectAll().where('id', '=', wishId).executeTakeFirstOrThrow()
      const events = await db().selectFrom('events').selectAll().where('object_id', '=', wishId).execute()
      const eventIds = new Set(events.map((e) => e.id))
      const jobs = (await db().selectFrom('jobs').selectAll().execute()).filter((j) => eventIds.has((JSON.parse(j.payload) as { event_id: string }).event_id))
      const { id: _id, created_at: _c, updated_at: _u, expires_at: _e, query: _q, ...wishRest } = wish
      return {
        wish: wishRest,
        events: events.map(({ id: _i, created_at: _t, request_id: _r, object_id: _o, data, ...rest }) => ({ ...rest, object: (JSON.parse(data) as { object: { status: string } }).object.status })),
        jobs: jobs.map((j) => ({ type: j.type, endpoint: (JSON.parse(j.payload) as { endpoint_id: string }).endpoint_id, attempts: j.attempts })).sort((x, y) => (x.endpoint < y.endpoint ? -1 : 1)),
      }
    }

    async function activeCount(a: TestAccount): Promise<number> {
      const rows = await db().selectFrom('wish_counts').select(['n']).where('account_id', '=', a.id).where('status', '=', 'active').execute()
      return rows.reduce((sum, r) => sum + Number(r.n), 0)
    }

    test('the wish, its count, its event and its deliveries', async () => {
      const a = await t.account()
      const wanted = (await a.request('POST', '/webhook_endpoints', { url: 'http://127.0.0.1:9/hooks/wishes', events: ['wish.created'] })).body.data as { id: string }
      const all = (await a.request('POST', '/webhook_endpoints', { url: 'http://127.0.0.1:9/hooks/all', events: ['*'] })).body.data as { id: string }
      await a.request('POST', '/webhook_endpoints', { url: 'http://127.0.0.1:9/hooks/payments', events: ['payment.created'] })
      const body = { query: 'a red bicycle', budget: { max: 200, currency: 'EUR' }, metadata: { colour: 'red' } }

      const plain = await a.request('POST', '/wishes', body)
      const keyed = await a.request('POST', '/wishes', body, { headers: { 'idempotency-key': randomUUID() } })
      assert.equal(plain.status, 201)
      assert.equal(keyed.status, 201)
      const [one, other] = [await footprint(a, plain.body.data.id), await footprint(a, keyed.body.data.id)]
      assert.deepEqual(one, other)
      assert.deepEqual(one.jobs.map((j) => j.endpoint), [wanted.id, all.id].sort())
      assert.equal(one.events.length, 1)
      assert.equal(await activeCount(a), 2)
      assert.equal((await a.request('GET', '/wishes?status=active')).body.meta.total, 2)
    })

    test('many at once: every wish counted once, with one event each', async () => {
      const a = await t.account()
      const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => a.request('POST', '/wishes', { query: `wish ${i}` })))
      assert.deepEqual([...new Set(answers.map((r) => r.status))], [201])
      assert.equal(await activeCount(a), 40)
      const events = await db().selectFrom('events').select(['object_id']).where('account_id', '=', a.id).where('type', '=', 'wish.created').execute()
      assert.deepEqual(events.map((e) => e.object_id).sort(), answers.map((r) => r.body.data.id as string).sort())
    })
  })
}
