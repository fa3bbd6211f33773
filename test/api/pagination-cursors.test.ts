import assert from 'node:assert/strict'
import { generateKeyPairSync, randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { CompiledQuery, type KyselyPlugin, type RootOperationNode, sql } from 'kysely'
import { ATTEMPT_COUNTER, type Counter, EVENT_COUNTER, oldestRows } from '../../src/db/counters.js'
import type { Executor } from '../../src/db/database.js'
import { newId } from '../../src/lib/ids.js'
import type { Window } from '../../src/lib/paging.js'
import * as agentsRepo from '../../src/modules/agents/repository.js'
import * as eventsRepo from '../../src/modules/events/repository.js'
import * as mandatesRepo from '../../src/modules/mandates/repository.js'
import * as paymentsRepo from '../../src/modules/payments/repository.js'
import * as trustedKeysRepo from '../../src/modules/trusted-keys/repository.js'
import * as webhooksRepo from '../../src/modules/webhooks/repository.js'
import * as wishesRepo from '../../src/modules/wishes/repository.js'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertError, assertInvalid, ids, newestFirst } from '../helpers/assertions.js'
import { createMandate, createWish, getList } from '../helpers/fixtures.js'
import { OpenApiContract } from '../helpers/openapi-contract.js'
import { pay, refundRaw } from '../helpers/payments.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Cursor pagination (issue 16, item 4), on every store: `starting_after` / `ending_before` and
 * `meta.has_more` on every list, beside the seed's limit/offset, which keep their meaning. Every list
 * is walked forwards and backwards by cursor and compared with its offset pages; objects made in the
 * same millisecond; filters with cursors; cursors that are refused (400 in the contract's envelope);
 * and the query plan of a cursor page: a seek of the list's index, never a scan up to the cursor.
 */

/** Every list of the API, as the paths this suite pages; each is checked for cursors and has_more. */
const LIST_OPERATIONS = [
  'listWishes', 'listMandates', 'listPayments', 'listRefunds', 'listEvents', 'listWebhookEndpoints',
  'listWebhookDeliveries', 'listAgents', 'listTrustedKeys',
]

const edJwk = (kid: string) => ({ ...generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }), kid })

/** Makes `t`'s clock answer one instant until the returned function is called: objects made meanwhile tie on created_at. */
function freezeClock(t: TestApp): () => void {
  const at = t.clock.now()
  t.clock.now = () => new Date(at)
  return () => { delete (t.clock as { now?: unknown }).now }
}

const withQuery = (path: string, qs: string) => `${path}${path.includes('?') ? '&' : '?'}${qs}`

/**
 * Checks one list against `expected` (its ids in list order), for each limit: the offset pages (meta
 * and has_more), a page after and before every object, and a client's walk forwards from the first
 * page and backwards from the last object, page for page the offset pages.
 */
async function checkList(a: TestAccount, path: string, expected: string[], limits: number[] = [1, 3]): Promise<void> {
  const total = expected.length
  const all = await getList(a, withQuery(path, 'limit=100'))
  assert.deepEqual(ids(all.data), expected, `${path}: the whole list`)
  assert.deepEqual(all.meta, { total, limit: 100, offset: 0, has_more: false })
  for (const limit of limits) {
    const at = `${path} (limit ${limit})`
    // Offset pages, as the seed specifies them, now with has_more.
    const byOffset: string[][] = []
    for (let offset = 0; offset < Math.max(total, 1); offset += limit) {
      const page = await getList(a, withQuery(path, `limit=${limit}&offset=${offset}`))
      assert.deepEqual(page.meta, { total, limit, offset, has_more: offset + limit < total }, `${at}: offset ${offset}`)
      assert.deepEqual(ids(page.data), expected.slice(offset, offset + limit), `${at}: offset ${offset}`)
      byOffset.push(ids(page.data))
    }
    // A page after and before every object.
    for (let i = 0; i < total; i++) {
      const afterIt = await getList(a, withQuery(path, `limit=${limit}&starting_after=${expected[i]}`))
      assert.deepEqual(ids(afterIt.data), expected.slice(i + 1, i + 1 + limit), `${at}: starting_after #${i}`)
      assert.deepEqual(afterIt.meta, { total, limit, offset: 0, has_more: i + 1 + limit < total }, `${at}: starting_after #${i}`)
      const beforeIt = await getList(a, withQuery(path, `limit=${limit}&ending_before=${expected[i]}`))
      assert.deepEqual(ids(beforeIt.data), expected.slice(Math.max(0, i - limit), i), `${at}: ending_before #${i}`)
      assert.deepEqual(beforeIt.meta, { total, limit, offset: 0, has_more: i - limit > 0 }, `${at}: ending_before #${i}`)
    }
    // A client walking forwards: the first page, then starting_after its last object while has_more.
    const forwards: string[][] = []
    let page = await getList(a, withQuery(path, `limit=${limit}`))
    forwards.push(ids(page.data))
    while (page.meta.has_more) {
      assert.ok(forwards.length <= total, `${at}: the forward walk ends`)
      page = await getList(a, withQuery(path, `limit=${limit}&starting_after=${page.data.at(-1).id}`))
      forwards.push(ids(page.data))
    }
    assert.deepEqual(forwards, byOffset, `${at}: forwards by cursor = the offset pages`)
    // ...and backwards from the last object: ending_before the first object of each page while has_more.
    if (total > 0) {
      const backwards: string[][] = []
      let cursor = expected.at(-1)!
      for (;;) {
        assert.ok(backwards.length <= total, `${at}: the backward walk ends`)
        page = await getList(a, withQuery(path, `limit=${limit}&ending_before=${cursor}`))
        backwards.unshift(ids(page.data))
        if (!page.meta.has_more) break
        cursor = page.data[0].id
      }
      assert.deepEqual(backwards.flat(), expected.slice(0, -1), `${at}: backwards by cursor`)
      for (const p of backwards) assert.ok(p.length === limit || p === backwards[0], `${at}: only the newest page may be short`)
    }
  }
}

for (const kind of storeKinds()) {
  describe(`cursor pagination (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind, { WEBHOOK_ALLOW_PRIVATE: 'true' }) })
    after(async () => { await t.close() })

    /**
     * Writes delivery attempts of an endpoint straight to the store (deliveries need a receiver otherwise),
     * with the count changes a recorded attempt inserts (meta.total comes from counters, migration 0014).
     */
    async function insertAttempts(a: TestAccount, endpointId: string, createdAt: string[], idOf: (i: number) => string = () => newId('wha')) {
      const rows = createdAt.map((at, i) => ({
        id: idOf(i), account_id: a.id, endpoint_id: endpointId, event_id: newId('evt'), event_type: 'wish.created', attempt: 1,
        status_code: 500, error: null, succeeded: 0, duration_ms: 3, next_retry_at: null, created_at: at,
      }))
      await t.store.db.kysely.insertInto('webhook_attempts').values(rows).execute()
      await t.store.db.kysely.insertInto('attempt_count_changes').values(webhooksRepo.countsOfAttempts(rows)).execute()
      return rows
    }

    /** POST as `a`: it must answer 201; returns the object. */
    async function made(a: TestAccount, path: string, body: Record<string, unknown>): Promise<any> {
      const res = await a.request('POST', path, body)
      assert.equal(res.status, 201, res.raw)
      return res.body.data
    }

    async function newAgent(a: TestAccount): Promise<{ id: string, key: string }> {
      const created = await a.request('POST', '/agents', { name: 'assistant' })
      assert.equal(created.status, 201, created.raw)
      const key = await a.request('POST', `/agents/${created.body.data.id}/keys`, {})
      assert.equal(key.status, 201, key.raw)
      return { id: created.body.data.id, key: key.body.data.key }
    }

    test('the OpenAPI document: every list takes starting_after and ending_before, and its meta has has_more', async () => {
      const doc = (await t.inject({ method: 'GET', url: '/openapi.json' })).body
      const lists: string[] = []
      for (const [path, item] of Object.entries<any>(doc.paths)) {
        const op = item.get
        const ok = op?.responses?.['200']?.content?.['application/json']?.schema
        if (!ok?.properties?.meta) continue
        lists.push(op.operationId)
        const names = (op.parameters ?? []).filter((p: any) => p.in === 'query').map((p: any) => p.name)
        for (const name of ['limit', 'offset', 'starting_after', 'ending_before']) assert.ok(names.includes(name), `${path}: ${name}`)
        const meta = ok.properties.meta
        assert.deepEqual(Object.keys(meta.properties).sort(), ['has_more', 'limit', 'offset', 'total'], path)
        assert.equal(meta.properties.has_more.type, 'boolean')
        assert.ok(meta.required.includes('has_more'), `${path}: has_more is always present`)
      }
      assert.deepEqual(lists.sort(), [...LIST_OPERATIONS].sort(), 'this suite covers every list')
    })

    test('every list, forwards and backwards by cursor, page for page as by offset; has_more at both ends', async () => {
      const a = await t.account()
      const b = await t.account()
      await createWish(b, { query: 'theirs' })
      const step = () => t.clock.advance(7)

      const wishes = []
      for (let i = 0; i < 5; i++) { step(); wishes.push(await createWish(a, { query: `wish ${i}` })) }
      const mandates = []
      for (let i = 0; i < 4; i++) { step(); mandates.push(await createMandate(t, a, { usage: 'multi_use', max_amount: 5000, budget_amount: 100_000 })) }
      const payments = []
      for (let i = 0; i < 6; i++) { step(); payments.push(await pay(a, { mandate_id: mandates[0].id, amount: 1000 })) }
      const refunds = []
      for (let i = 0; i < 4; i++) {
        step()
        const res = await refundRaw(a, payments[0].id, { amount: 100 })
        assert.equal(res.status, 201, res.raw)
        refunds.push(res.body.data)
      }
      const agents = []
      for (let i = 0; i < 4; i++) { step(); agents.push(await made(a, '/agents', { name: `agent ${i}` })) }
      const keys = []
      for (let i = 0; i < 4; i++) { step(); keys.push(await made(a, '/trusted_keys', { role: 'trusted_agent_provider', public_jwk: edJwk(`k${i}`) })) }
      const endpoints = []
      for (let i = 0; i < 4; i++) { step(); endpoints.push(await made(a, '/webhook_endpoints', { url: `http://127.0.0.1:9/hook-${i}`, events: ['*'] })) }
      const base = t.clock.now().getTime()
      const attempts = await insertAttempts(a, endpoints[0].id, [0, 1, 2, 3, 4].map((i) => new Date(base + i * 5).toISOString()))

      assert.equal(wishes.length + agents.length + keys.length + endpoints.length, 17)
      await checkList(a, '/wishes', ids(newestFirst(wishes)))
      await checkList(a, '/mandates', ids(newestFirst(mandates)))
      await checkList(a, '/payments', ids(newestFirst(payments)))
      await checkList(a, `/payments/${payments[0].id}/refunds`, ids(newestFirst(refunds)))
      await checkList(a, '/agents', ids(newestFirst(agents)))
      await checkList(a, '/trusted_keys', ids(newestFirst(keys)))
      await checkList(a, '/webhook_endpoints', ids(newestFirst(endpoints)))
      await checkList(a, `/webhook_endpoints/${endpoints[0].id}/deliveries`, ids(newestFirst(attempts)))
      const events = (await getList(a, '/events?limit=100')).data
      assert.ok(events.length > 30, `${events.length} events`)
      assert.deepEqual(ids(events), ids(newestFirst(events)))
      await checkList(a, '/events', ids(events), [7, 30])
      // An empty list: one empty page either way.
      await checkList(a, `/payments/${payments[1].id}/refunds`, [])
    })

    test('objects made in the same millisecond are paged by id: none skipped, none repeated', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { usage: 'multi_use', max_amount: 5000, budget_amount: 100_000 })
      t.clock.advance(5)
      const payments = [await pay(a, { mandate_id: m.id, amount: 100 })]
      t.clock.advance(5)
      const thaw = freezeClock(t)
      try {
        for (let i = 0; i < 5; i++) payments.push(await pay(a, { mandate_id: m.id, amount: 100 + i }))
      } finally {
        thaw()
      }
      t.clock.advance(5)
      payments.push(await pay(a, { mandate_id: m.id, amount: 200 }))
      const tied = payments.slice(1, 6)
      assert.equal(new Set(tied.map((p) => p.created_at)).size, 1, 'five payments share one created_at')
      const expected = ids(newestFirst(payments))
      assert.deepEqual(expected, ids([...payments].reverse()), 'ids of one millisecond keep creation order')
      await checkList(a, '/payments', expected, [1, 2, 3])

      // Ties whose ids are not in creation order (another process's ids, or a clock step back): the order is by id.
      const ep = await made(a, '/webhook_endpoints', { url: 'http://127.0.0.1:9/ties', events: ['*'] })
      const at = new Date(t.clock.now().getTime() + 1000).toISOString()
      const suffixes = ['7zzzzzzzzzzzzzzzzzzzzzzzzz', '00000000000000000000000000', 'm0000000000000000000000000', '0000000000000000000000000z', 'zz00000000000000000000000z', '5555555555555555555555555y']
      const rows = await insertAttempts(a, ep.id, [at, at, at, at, at, at], (i) => `wha_${suffixes[i]}`)
      const older = await insertAttempts(a, ep.id, [new Date(Date.parse(at) - 1).toISOString()])
      const newer = await insertAttempts(a, ep.id, [new Date(Date.parse(at) + 1).toISOString()])
      const all = newestFirst([...rows, ...older, ...newer])
      assert.equal(all[0]!.id, newer[0]!.id)
      await checkList(a, `/webhook_endpoints/${ep.id}/deliveries`, ids(all), [1, 2, 4])
    })

    test('filters combine with cursors; the cursor object need not match the filter', async () => {
      const a = await t.account()
      const wish = await createWish(a, { query: 'for mandates' })
      const m1 = await createMandate(t, a, { usage: 'multi_use', max_amount: 5000, budget_amount: 100_000, wish_id: wish.id })
      const m2 = await createMandate(t, a, { usage: 'multi_use', max_amount: 5000, budget_amount: 100_000 })
      const payments = []
      const methods = ['card', 'test_card_declined', 'card', 'test_card_declined', 'test_card_declined', 'card', 'card', 'test_card_declined']
      for (let i = 0; i < methods.length; i++) {
        t.clock.advance(3)
        payments.push(await pay(a, { mandate_id: i % 2 === 0 ? m1.id : m2.id, amount: 100, payment_method: methods[i] }))
      }
      const failed = newestFirst(payments.filter((p) => p.status === 'failed'))
      assert.equal(failed.length, 4)
      await checkList(a, '/payments?status=failed', ids(failed), [1, 3])
      await checkList(a, `/payments?mandate_id=${m1.id}`, ids(newestFirst(payments.filter((p) => p.mandate_id === m1.id))), [1, 3])
      await checkList(a, `/payments?wish_id=${wish.id}&status=succeeded`, ids(newestFirst(payments.filter((p) => p.mandate_id === m1.id && p.status === 'succeeded'))), [1])

      // A succeeded payment as the cursor of the failed ones: the failed payments older (newer) than it.
      const all = newestFirst(payments)
      const at = 2
      const pivot = all[at]!
      assert.equal(pivot.status, 'succeeded')
      const older = all.slice(at + 1).filter((p) => p.status === 'failed')
      const newer = all.slice(0, at).filter((p) => p.status === 'failed')
      assert.deepEqual([older.length, newer.length], [3, 1])
      const afterPivot = await getList(a, `/payments?status=failed&starting_after=${pivot.id}`)
      assert.deepEqual(afterPivot, { data: older, meta: { total: 4, limit: 10, offset: 0, has_more: false } })
      const beforePivot = await getList(a, `/payments?status=failed&limit=1&ending_before=${pivot.id}`)
      assert.deepEqual(beforePivot, { data: newer.slice(-1), meta: { total: 4, limit: 1, offset: 0, has_more: newer.length > 1 } })

      // Wishes by status, mandates by wish, events by type.
      t.clock.advance(3)
      const cancelled = await createWish(a, { query: 'to cancel' })
      assert.equal((await a.request('PUT', `/wishes/${cancelled.id}`, { status: 'cancelled' })).status, 200)
      const active = []
      for (let i = 0; i < 4; i++) { t.clock.advance(3); active.push(await createWish(a, { query: `active ${i}` })) }
      const activeIds = ids(newestFirst([wish, ...active]))
      await checkList(a, '/wishes?status=active', activeIds, [2])
      const afterCancelled = await getList(a, `/wishes?status=active&starting_after=${cancelled.id}`)
      assert.deepEqual(ids(afterCancelled.data), [wish.id], 'a cancelled wish positions the active ones')
      await checkList(a, `/mandates?wish_id=${wish.id}`, [m1.id])
      const created = (await getList(a, '/events?type=wish.created&limit=100')).data
      assert.equal(created.length, 6)
      await checkList(a, '/events?type=wish.created', ids(created), [4])
    })

    test('bad cursors are 400 in the envelope, naming the parameter; another account\'s id answers as an unknown one', async () => {
      const a = await t.account()
      const b = await t.account()
      const m = await createMandate(t, a, { usage: 'multi_use', max_amount: 5000, budget_amount: 100_000 })
      const mine = await pay(a, { mandate_id: m.id, amount: 100 })
      await pay(a, { mandate_id: m.id, amount: 100 })
      const theirs = await pay(b, { mandate_id: (await createMandate(t, b)).id, amount: 100 })

      // Two cursors, or a cursor and an offset: parameter_invalid, before anything is read.
      assertInvalid(await a.request('GET', `/payments?starting_after=${mine.id}&ending_before=${mine.id}`), 'ending_before')
      assertInvalid(await a.request('GET', `/payments?starting_after=${mine.id}&offset=1`), 'offset')
      assertInvalid(await a.request('GET', `/payments?ending_before=${mine.id}&offset=5`), 'offset')
      assertInvalid(await a.request('GET', '/payments?starting_after=pay_unknown&ending_before=pay_unknown'), 'ending_before')
      // offset=0 is the default, so it goes with a cursor.
      assert.equal((await getList(a, `/payments?starting_after=${mine.id}&offset=0`)).meta.offset, 0)
      // Empty or longer than any id: the schema's rules.
      assertInvalid(await a.request('GET', '/payments?starting_after='), 'starting_after')
      assertInvalid(await a.request('GET', `/payments?ending_before=${'x'.repeat(256)}`), 'ending_before')

      // Not an object of this list: 400 resource_missing with the parameter, like Stripe's.
      const missing = async (url: string, param: string) => {
        const res = await a.request('GET', url)
        return assertError(res, 400, 'invalid_request_error', 'resource_missing', param)
      }
      const unknown = await missing('/payments?starting_after=pay_01aaaaaaaaaaaaaaaaaaaaaaaa', 'starting_after')
      assert.equal(unknown.message, 'No such payment: \'pay_01aaaaaaaaaaaaaaaaaaaaaaaa\' (starting_after takes the id of a payment of this list)')
      assert.equal(unknown.errors, undefined)
      await missing('/payments?ending_before=nope', 'ending_before')
      const otherKind = await missing(`/payments?starting_after=${m.id}`, 'starting_after')
      assert.match(otherKind.message, /`mdt_…` is a mandate id; this route takes a payment id \(`pay_…`\)/)

      // Another account's payment: the same answer as an unknown id, with nothing about it.
      const foreign = await missing(`/payments?starting_after=${theirs.id}`, 'starting_after')
      const unknownLike = await missing(`/payments?starting_after=${theirs.id.slice(0, -4)}zzzz`, 'starting_after')
      const shape = (e: any, id: string) => ({ ...e, request_id: undefined, message: e.message.replace(id, '<id>') })
      assert.deepEqual(shape(foreign, theirs.id), shape(unknownLike, `${theirs.id.slice(0, -4)}zzzz`))
      for (const [list, id] of [['/wishes', (await createWish(b)).id], ['/events', (await getList(b, '/events?limit=1')).data[0].id], ['/mandates', theirs.mandate_id]] as const) {
        await missing(`${list}?ending_before=${id}`, 'ending_before')
      }

      // The scope of a list: a refund of another payment, an attempt of another endpoint.
      const refund = await refundRaw(a, mine.id, { amount: 10 })
      assert.equal(refund.status, 201, refund.raw)
      const other = await pay(a, { mandate_id: m.id, amount: 100 })
      await missing(`/payments/${other.id}/refunds?starting_after=${refund.body.data.id}`, 'starting_after')
      assert.deepEqual(ids((await getList(a, `/payments/${mine.id}/refunds?ending_before=${refund.body.data.id}`)).data), [])
      const ep1 = await made(a, '/webhook_endpoints', { url: 'http://127.0.0.1:9/one', events: ['*'] })
      const ep2 = await made(a, '/webhook_endpoints', { url: 'http://127.0.0.1:9/two', events: ['*'] })
      const [attempt] = await insertAttempts(a, ep1.id, [t.clock.now().toISOString()])
      await missing(`/webhook_endpoints/${ep2.id}/deliveries?starting_after=${attempt!.id}`, 'starting_after')
      assert.equal((await getList(a, `/webhook_endpoints/${ep1.id}/deliveries?starting_after=${attempt!.id}`)).meta.total, 1)

      // An agent key: a payment or mandate it may not read is no cursor for it, as GET /payments/:id is a 404.
      const agent = await newAgent(a)
      const granted = await createMandate(t, a, { usage: 'multi_use', max_amount: 5000, budget_amount: 100_000, agent_id: agent.id })
      const own = (await a.request('POST', '/payments', { mandate_id: granted.id, amount: 100, idempotency_key: randomUUID() }, { key: agent.key })).body.data
      const asAgent = (url: string) => a.request('GET', url, undefined, { key: agent.key })
      assertError(await asAgent(`/payments?starting_after=${mine.id}`), 400, 'invalid_request_error', 'resource_missing', 'starting_after')
      assertError(await asAgent(`/mandates?starting_after=${m.id}`), 400, 'invalid_request_error', 'resource_missing', 'starting_after')
      const ownPage = await asAgent(`/payments?ending_before=${own.id}`)
      assert.equal(ownPage.status, 200, ownPage.raw)
      assert.deepEqual(ownPage.body.meta, { total: 1, limit: 10, offset: 0, has_more: false })
      const otherAgent = await asAgent(`/mandates?agent_id=agt_someoneelse&starting_after=${granted.id}`)
      assert.deepEqual(otherAgent.body, { data: [], meta: { total: 0, limit: 10, offset: 0, has_more: false } })

      // A deleted wish is no cursor any more: page from its neighbour.
      const w1 = await createWish(a, { query: 'one' })
      t.clock.advance(3)
      const w2 = await createWish(a, { query: 'two' })
      assert.equal((await a.request('DELETE', `/wishes/${w2.id}`)).status, 204)
      await missing(`/wishes?starting_after=${w2.id}`, 'starting_after')
      assert.equal((await getList(a, `/wishes?ending_before=${w1.id}`)).meta.total, 1)

      // Every one of these answers is declared by the document, body and all (Error400 lists resource_missing).
      const contract = new OpenApiContract((await t.inject({ method: 'GET', url: '/openapi.json' })).body)
      for (const url of [
        `/payments?starting_after=${mine.id}`, `/payments?ending_before=${mine.id}&limit=1`, `/payments?starting_after=${theirs.id}`,
        `/payments?starting_after=${mine.id}&ending_before=${mine.id}`, `/payments?starting_after=${mine.id}&offset=3`,
        '/payments?starting_after=', `/payments/${other.id}/refunds?starting_after=${refund.body.data.id}`,
        `/webhook_endpoints/${ep2.id}/deliveries?ending_before=${attempt!.id}`, `/wishes?starting_after=${w2.id}`,
      ]) {
        const res = await a.request('GET', url)
        assert.deepEqual(contract.problems({ method: 'GET', url, status: res.status, headers: res.headers, raw: res.raw }), [], url)
      }
    })

    test('offset paging is unchanged: defaults, limits, past the end; has_more on every answer', async () => {
      const a = await t.account()
      const made = []
      for (let i = 0; i < 12; i++) { t.clock.advance(2); made.push(await createWish(a, { query: `w${i}` })) }
      const expected = ids(newestFirst(made))
      const first = await getList(a, '/wishes')
      assert.deepEqual(first.meta, { total: 12, limit: 10, offset: 0, has_more: true })
      assert.deepEqual(ids(first.data), expected.slice(0, 10))
      const second = await getList(a, '/wishes?offset=10')
      assert.deepEqual(second.meta, { total: 12, limit: 10, offset: 10, has_more: false })
      assert.deepEqual(ids(second.data), expected.slice(10))
      assert.deepEqual(await getList(a, '/wishes?offset=12'), { data: [], meta: { total: 12, limit: 10, offset: 12, has_more: false } })
      assert.deepEqual(await getList(a, '/wishes?offset=500'), { data: [], meta: { total: 12, limit: 10, offset: 500, has_more: false } })
      assert.deepEqual((await getList(a, '/wishes?limit=11&offset=1')).meta, { total: 12, limit: 11, offset: 1, has_more: false })
      assert.deepEqual((await getList(a, '/wishes?limit=11')).meta, { total: 12, limit: 11, offset: 0, has_more: true })
      // The last page by cursor and by offset are the same objects.
      assert.deepEqual(ids((await getList(a, `/wishes?starting_after=${expected[9]}`)).data), ids(second.data))
    })

    /** The SQL a repository's list function runs (it must run exactly one statement), compiled for the store. */
    async function statementOf(list: (spy: Executor) => Promise<unknown>): Promise<{ sql: string, parameters: readonly unknown[] }> {
      const db = t.store.db.kysely
      const captured: Array<{ sql: string, parameters: readonly unknown[] }> = []
      // A query built and run by Kysely passes the plugin (counted once run: a template is compiled through
      // it too); one compiled once (db/query-template.ts, as the lists are) is run by executeQuery, which
      // the proxy sees.
      const built = new Map<unknown, RootOperationNode>()
      const ranCompiled = new Set<unknown>()
      const capture: KyselyPlugin = {
        transformQuery: (args) => { built.set(args.queryId, args.node); return args.node },
        transformResult: async (args) => {
          const node = built.get(args.queryId)
          // A template keeps the id it was compiled with: the proxy has it already.
          if (node && !ranCompiled.has(args.queryId)) captured.push(db.getExecutor().compileQuery(node, { queryId: 'plan' }))
          return args.result
        },
      }
      const withCapture = db.withPlugin(capture)
      const spy = new Proxy(withCapture, {
        get(target, property) {
          if (property === 'executeQuery') {
            return (query: CompiledQuery) => {
              captured.push(query)
              ranCompiled.add(query.queryId)
              return target.executeQuery(query)
            }
          }
          const value: unknown = Reflect.get(target, property, target)
          return typeof value === 'function' ? value.bind(target) : value
        },
      })
      await list(spy as Executor)
      assert.equal(captured.length, 1)
      return captured[0]!
    }

    /**
     * The plan of one statement. `pricedOut`: PostgreSQL is kept off sequential scans, bitmap scans and
     * sorts, which tables this small would otherwise get by statistics (see the cursor test below).
     */
    async function explain(statement: { sql: string, parameters: readonly unknown[] }, pricedOut: boolean): Promise<string> {
      if (t.store.name === 'sqlite') {
        const rows = t.store.db.sqlite!.connection.prepare(`explain query plan ${statement.sql}`).all(...statement.parameters) as Array<{ detail: string }>
        return rows.map((r) => r.detail).join(' | ')
      }
      return t.store.db.kysely.transaction().execute(async (trx) => {
        if (pricedOut) {
          await trx.executeQuery(CompiledQuery.raw('set local enable_seqscan = off'))
          await trx.executeQuery(CompiledQuery.raw('set local enable_bitmapscan = off'))
          await trx.executeQuery(CompiledQuery.raw('set local enable_sort = off'))
        }
        const result = await trx.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`explain ${statement.sql}`, [...statement.parameters]))
        return result.rows.map((r) => r['QUERY PLAN']).join(' | ')
      })
    }

    test('a cursor page is a seek of the list\'s index: no scan up to the cursor, no sort', async () => {
      const a = await t.account()
      const from = { created_at: '2026-11-22T10:00:00.000Z', id: 'x_01' }
      const windows: Window[] = [{ take: 11, skip: 0, seek: { direction: 'after', from } }, { take: 11, skip: 0, seek: { direction: 'before', from } }]
      const now = '2026-11-22T10:00:00.000Z'
      const cases: Array<[string, (spy: Executor, w: Window) => Promise<unknown>]> = [
        ['payments_account_created_idx', (spy, w) => paymentsRepo.listPayments(spy, { accountId: a.id }, w)],
        ['payments_account_status_created_idx', (spy, w) => paymentsRepo.listPayments(spy, { accountId: a.id, status: 'succeeded' }, w)],
        ['payments_account_mandate_created_idx', (spy, w) => paymentsRepo.listPayments(spy, { accountId: a.id, mandateId: 'mdt_x' }, w)],
        ['payments_account_wish_created_idx', (spy, w) => paymentsRepo.listPayments(spy, { accountId: a.id, wishId: 'wsh_x' }, w)],
        ['refunds_payment_created_idx', (spy, w) => paymentsRepo.listRefunds(spy, a.id, 'pay_x', w)],
        ['wishes_account_created_idx', (spy, w) => wishesRepo.listWishes(spy, { accountId: a.id, now }, w)],
        ['wishes_account_status_created_idx', (spy, w) => wishesRepo.listWishes(spy, { accountId: a.id, status: 'active', now }, w)],
        ['mandates_account_created_idx', (spy, w) => mandatesRepo.listMandates(spy, { accountId: a.id, now }, w)],
        ['mandates_account_agent_created_idx', (spy, w) => mandatesRepo.listMandates(spy, { accountId: a.id, agentId: 'agt_x', now }, w)],
        ['events_account_created_idx', (spy, w) => eventsRepo.listEvents(spy, a.id, undefined, w)],
        ['events_account_type_created_idx', (spy, w) => eventsRepo.listEvents(spy, a.id, 'wish.created', w)],
        ['webhook_endpoints_account_created_idx', (spy, w) => webhooksRepo.listEndpoints(spy, a.id, w)],
        ['webhook_attempts_endpoint_created_idx', (spy, w) => webhooksRepo.listAttempts(spy, 'we_x', w)],
        ['agents_account_created_idx', (spy, w) => agentsRepo.listAgents(spy, { accountId: a.id }, w)],
        ['trusted_keys_account_created_idx', (spy, w) => trustedKeysRepo.listTrustedKeys(spy, { accountId: a.id }, w)],
      ]
      for (const [index, list] of cases) {
        for (const window of windows) {
          // On tables this small a sort of a few rows costs about what an ordered scan does, and the
          // planner picked either by the statistics other tests left (one full run took events' (account,
          // type) index and sorted). The question is whether the index serves the page in order: with
          // sorts priced out, a plan without one is chosen exactly when such an index exists.
          const plan = await explain(await statementOf((spy) => list(spy, window)), true)
          const where = `${index}, ${window.seek!.direction}: ${plan}`
          if (t.store.name === 'sqlite') {
            assert.match(plan, new RegExp(`USING (COVERING )?INDEX ${index} \\(.*\\(created_at,id\\)[<>]\\(\\?,\\?\\)\\)`), where)
            assert.doesNotMatch(plan, /TEMP B-TREE/, where)
          } else {
            assert.match(plan, new RegExp(`Index (Only )?Scan (Backward )?using ${index} `), where)
            assert.match(plan, /Index Cond: .*ROW\(created_at, id\) [<>] ROW\(/, where)
            assert.doesNotMatch(plan, /Sort/, where)
          }
        }
      }
    })

    test('a first page walks its own list\'s index, even when one account holds most rows and another the newest; retention keeps its own', async () => {
      // PostgreSQL took the retention index on created_at for such a page, newest first, and filtered out
      // every newer row of the other accounts on the way (migration 0015 indexes an expression instead).
      const [big, small] = [await t.account(), await t.account()]
      const [bigEndpoint, smallEndpoint] = [await made(big, '/webhook_endpoints', { url: 'http://127.0.0.1:9/big', events: ['*'] }), await made(small, '/webhook_endpoints', { url: 'http://127.0.0.1:9/small', events: ['*'] })]
      const db = t.store.db.kysely
      async function plant(a: TestAccount, endpointId: string, count: number, from: number) {
        for (let start = 0; start < count; start += 1000) {
          const events = Array.from({ length: Math.min(1000, count - start) }, (_, i) => {
            const at = new Date(from + (start + i) * 10).toISOString()
            return { id: newId('evt'), account_id: a.id, type: 'wish.created', object_id: newId('wish'), data: '{"object":{}}', request_id: null, created_at: at }
          })
          await db.insertInto('events').values(events).execute()
          await db.insertInto('webhook_attempts').values(events.map((e) => ({
            id: newId('wha'), account_id: a.id, endpoint_id: endpointId, event_id: e.id, event_type: e.type, attempt: 1,
            status_code: 200, error: null, succeeded: 1, duration_ms: 3, next_retry_at: null, created_at: e.created_at,
          }))).execute()
        }
      }
      const day = Date.parse('2026-11-20T00:00:00.000Z')
      await plant(big, bigEndpoint.id, 20_000, day)
      await plant(small, smallEndpoint.id, 2_000, day + 86_400_000)
      // Only this test's tables: a database-wide analyze also reads every other schema's (tests running
      // alongside, a bench's leftovers), and timed out on a busy machine.
      await sql`analyze events`.execute(db)
      await sql`analyze webhook_attempts`.execute(db)
      const first: Window = { take: 11, skip: 0 }
      const cases: Array<[string, (spy: Executor) => Promise<unknown>]> = [
        ['events_account_created_idx', (spy) => eventsRepo.listEvents(spy, big.id, undefined, first)],
        ['webhook_attempts_endpoint_created_idx', (spy) => webhooksRepo.listAttempts(spy, bigEndpoint.id, first)],
      ]
      for (const [index, list] of cases) {
        // The planner left to its statistics: the question is which index it prefers.
        const plan = await explain(await statementOf(list), false)
        if (t.store.name === 'sqlite') assert.match(plan, new RegExp(`USING (COVERING )?INDEX ${index} `), plan)
        else assert.match(plan, new RegExp(`Index (Only )?Scan (Backward )?using ${index} `), plan)
        assert.doesNotMatch(plan, /(events|webhook_attempts)_created_idx/, plan)
      }
      // Retention's search keeps its own index: with nothing old enough, a range scan that ends at once.
      const retention: Array<[string, Counter]> = [['events_created_idx', EVENT_COUNTER], ['webhook_attempts_created_idx', ATTEMPT_COUNTER]]
      for (const [index, counter] of retention) {
        const plan = await explain(await statementOf((spy) => oldestRows(spy, counter, '2026-01-01T00:00:00.000Z', 1000).execute()), false)
        // SQLite, which 0015 leaves alone, may skip-scan the list's index once ANALYZE saw few accounts:
        // a search either way, never a scan of the table.
        if (t.store.name === 'sqlite') assert.match(plan, /^SEARCH \S+ USING (COVERING )?INDEX \S+ \(.*created_at<\?\)$/, plan)
        else assert.match(plan, new RegExp(`(Index Scan using|Bitmap Index Scan on) ${index} `), plan)
      }
    })
  })
}
