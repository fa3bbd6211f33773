import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { createSandboxProcessor } from '../../src/modules/payments/processors/sandbox.js'
import { DELIVER_JOB } from '../../src/modules/events/outbox.js'
import { createServices } from '../../src/services.js'
import { startTestApp, type TestAccount, type TestApp, toResponse } from '../helpers/app.js'
import { assertError, assertNotFound, requestIdOf } from '../helpers/assertions.js'
import { createMandate, eventsOf } from '../helpers/fixtures.js'
import { assertReplay } from '../helpers/idempotency.js'
import { getPayment, holding, pay } from '../helpers/payments.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * POST /payments/{id}/settle (issue 16, item 5), on every store: a sandbox payment still pending or
 * processing settles at once, through the settlement job's own steps (the same events, webhooks and
 * mandate effects), exactly once however many requests and job runs race for it.
 */

/** Long enough that nothing settles on its own during a test unless the clock is moved. */
const SETTLE_MS = 60_000

const settle = (a: TestAccount, id: string, body?: unknown, options: { key?: string | null, headers?: Record<string, string> } = {}) =>
  a.request('POST', `/payments/${id}/settle`, body, options)

for (const kind of storeKinds()) {
  describe(`POST /payments/{id}/settle (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind, { SANDBOX_SETTLEMENT_DELAY_MS: String(SETTLE_MS), WEBHOOK_ALLOW_PRIVATE: 'true' }) })
    after(async () => { await t.close() })

    const types = async (a: TestAccount, id: string) => (await eventsOf(t, a.id, id)).map((e) => e.type)

    test('a pending bank_transfer settles now: processing then succeeded, its events carry the request id, the single_use mandate is consumed', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { max_amount: 2000 })
      const p = await pay(a, { mandate_id: m.id, amount: 1500, payment_method: 'bank_transfer' })
      assert.equal(p.status, 'pending')
      t.clock.advance(1)

      const res = await settle(a, p.id)
      assert.equal(res.status, 200, res.raw)
      const settled = res.body.data
      assert.deepEqual(settled, { ...p, status: 'succeeded', updated_at: settled.updated_at })
      assert.ok(settled.updated_at > p.updated_at)
      assert.deepEqual(await getPayment(a, p.id), settled)
      assert.deepEqual(await holding(a, m.id), { status: 'consumed', amount_used: 1500, uses_count: 1 })

      const events = await eventsOf(t, a.id, p.id)
      assert.deepEqual(events.map((e) => e.type), ['payment.created', 'payment.processing', 'payment.succeeded'])
      assert.deepEqual(events.map((e) => e.data.object.status), ['pending', 'processing', 'succeeded'])
      assert.deepEqual(events[2]!.data.object, settled)
      for (const e of events.slice(1)) assert.equal(e.request_id, requestIdOf(res))
      assert.deepEqual(await types(a, m.id), ['mandate.created', 'mandate.consumed'])

      // Final: a second settle is a conflict, and the job, when it runs, changes nothing and goes.
      assertError(await settle(a, p.id), 409, 'conflict_error', 'invalid_state_transition')
      t.clock.advance(SETTLE_MS)
      await t.jobs.runOnce()
      await t.jobs.runOnce()
      assert.deepEqual(await getPayment(a, p.id), settled)
      assert.equal((await eventsOf(t, a.id, p.id)).length, 3)
      const left = await t.store.db.kysely.selectFrom('jobs').select('payload').where('type', '=', 'payment.settle').execute()
      assert.equal(left.filter((j) => j.payload.includes(p.id)).length, 0, 'the settlement job is done')
    })

    test('a processing payment (the job took its first step) settles now; test_bank_transfer_failed ends failed and releases the hold', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { usage: 'multi_use', max_amount: 2000, budget_amount: 5000 })
      const ok = await pay(a, { mandate_id: m.id, amount: 1000, payment_method: 'bank_transfer' })
      const bad = await pay(a, { mandate_id: m.id, amount: 700, payment_method: 'test_bank_transfer_failed' })
      await t.jobs.runOnce()
      assert.equal((await getPayment(a, ok.id)).status, 'processing')
      assert.equal((await getPayment(a, bad.id)).status, 'processing')

      const done = await settle(a, ok.id)
      assert.equal(done.status, 200, done.raw)
      assert.equal(done.body.data.status, 'succeeded')
      assert.deepEqual(await types(a, ok.id), ['payment.created', 'payment.processing', 'payment.succeeded'])

      const failed = await settle(a, bad.id)
      assert.equal(failed.status, 200, failed.raw)
      assert.equal(failed.body.data.status, 'failed')
      assert.equal(failed.body.data.failure_code, 'bank_transfer_failed')
      assert.equal(typeof failed.body.data.failure_message, 'string')
      assert.deepEqual(await types(a, bad.id), ['payment.created', 'payment.processing', 'payment.failed'])
      // Only the succeeded payment still holds the multi_use mandate.
      assert.deepEqual(await holding(a, m.id), { status: 'active', amount_used: 1000, uses_count: 1 })
    })

    test('its events are delivered like the job\'s: one webhook job per event and endpoint', async () => {
      const a = await t.account()
      const endpoint = await a.request('POST', '/webhook_endpoints', { url: 'http://127.0.0.1:9/hooks', events: ['payment.processing', 'payment.succeeded'] })
      assert.equal(endpoint.status, 201, endpoint.raw)
      const m = await createMandate(t, a, { max_amount: 2000 })
      const p = await pay(a, { mandate_id: m.id, amount: 100, payment_method: 'bank_transfer' })
      assert.equal((await settle(a, p.id)).status, 200)
      const events = (await eventsOf(t, a.id, p.id)).filter((e) => e.type !== 'payment.created')
      const jobs = await t.store.db.kysely.selectFrom('jobs').select('payload').where('type', '=', DELIVER_JOB).execute()
      const delivered = jobs.map((j) => JSON.parse(j.payload) as { endpoint_id: string, event_id: string }).filter((j) => j.endpoint_id === endpoint.body.data.id)
      assert.deepEqual(delivered.map((j) => j.event_id).sort(), events.map((e) => e.id).sort())
    })

    test('refusals: final payments 409, unknown or another account\'s 404, read and agent keys 403, unknown members 400', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { usage: 'multi_use', max_amount: 2000, budget_amount: 5000 })
      const card = await pay(a, { mandate_id: m.id, amount: 100 })
      const declined = await pay(a, { mandate_id: m.id, amount: 100, payment_method: 'test_card_declined' })
      for (const p of [card, declined]) {
        const error = assertError(await settle(a, p.id), 409, 'conflict_error', 'invalid_state_transition')
        assert.match(error.message, new RegExp(`this one is ${p.status}`))
      }
      const refunded = await a.request('POST', `/payments/${card.id}/refunds`, { idempotency_key: randomUUID() })
      assert.equal(refunded.status, 201, refunded.raw)
      assertError(await settle(a, card.id), 409, 'conflict_error', 'invalid_state_transition')

      const pending = await pay(a, { mandate_id: m.id, amount: 100, payment_method: 'bank_transfer' })
      assertNotFound(await settle(a, 'pay_unknown'))
      const hinted = assertError(await settle(a, m.id), 404, 'invalid_request_error', 'resource_missing', 'id')
      assert.match(hinted.message, /mandate id/)
      const other = await t.account()
      assertNotFound(await settle(other, pending.id))
      assertError(await settle(a, pending.id, undefined, { key: a.readKey }), 403, 'permission_error', 'insufficient_scope')
      const agent = await a.request('POST', '/agents', { name: 'assistant' })
      const agentKey = await a.request('POST', `/agents/${agent.body.data.id}/keys`, {})
      assertError(await settle(a, pending.id, undefined, { key: agentKey.body.data.key }), 403, 'permission_error', 'insufficient_scope')
      assertError(await settle(a, pending.id, { amount: 1 }), 400, 'invalid_request_error', 'parameter_unknown')
      // None of them moved it.
      assert.equal((await getPayment(a, pending.id)).status, 'pending')
      assert.deepEqual(await types(a, pending.id), ['payment.created'])
    })

    test('idempotency: a retry with the same key replays the 200; the same key on another payment is 422', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { usage: 'multi_use', max_amount: 2000, budget_amount: 5000 })
      const p = await pay(a, { mandate_id: m.id, amount: 100, payment_method: 'bank_transfer' })
      const q = await pay(a, { mandate_id: m.id, amount: 100, payment_method: 'bank_transfer' })
      const key = randomUUID()
      const first = await settle(a, p.id, undefined, { headers: { 'idempotency-key': key } })
      assert.equal(first.status, 200, first.raw)
      assertReplay(await settle(a, p.id, undefined, { headers: { 'idempotency-key': key } }), first)
      assertReplay(await settle(a, p.id, { idempotency_key: key }), first)
      assertError(await settle(a, q.id, { idempotency_key: key }), 422, 'idempotency_error', 'idempotency_key_reused')
      assert.equal((await eventsOf(t, a.id, p.id)).length, 3)
      assert.equal((await getPayment(a, q.id)).status, 'pending')
    })

    test('many requests and the job settling the same payments at once: each settles once, with one event per step', async () => {
      const a = await t.account()
      const payments: any[] = []
      // Half already processing (the job took its first step), half still pending; each on its own single_use mandate.
      for (const phase of ['processing', 'pending']) {
        for (let i = 0; i < 4; i++) {
          const m = await createMandate(t, a, { max_amount: 1000 })
          payments.push({ ...(await pay(a, { mandate_id: m.id, amount: 500, payment_method: i % 2 === 0 ? 'bank_transfer' : 'test_bank_transfer_failed' })), mandate: m })
        }
        if (phase === 'processing') await t.jobs.runOnce()
      }
      // Every job is due, and past settle_at: the runner concludes what it finds processing.
      t.clock.advance(SETTLE_MS)
      const requests = payments.flatMap((p) => Array.from({ length: 10 }, () => settle(a, p.id)))
      const [answers] = await Promise.all([Promise.all(requests), t.jobs.runOnce(), t.jobs.runOnce(), t.jobs.runOnce()])
      await t.jobs.runOnce()
      await t.jobs.runOnce()

      for (const [i, p] of payments.entries()) {
        const mine = answers.slice(i * 10, i * 10 + 10)
        const ok = mine.filter((r) => r.status === 200)
        assert.ok(ok.length <= 1, `${ok.length} requests settled ${p.id}`)
        for (const r of mine.filter((x) => x.status !== 200)) assertError(r, 409, 'conflict_error', 'invalid_state_transition')
        const final = p.payment_method === 'bank_transfer' ? 'succeeded' : 'failed'
        const now = await getPayment(a, p.id)
        assert.equal(now.status, final)
        if (ok.length === 1) assert.deepEqual(ok[0]!.body.data, now)
        assert.deepEqual(await types(a, p.id), ['payment.created', 'payment.processing', `payment.${final}`])
        assert.deepEqual(await types(a, p.mandate.id), final === 'succeeded' ? ['mandate.created', 'mandate.consumed'] : ['mandate.created'])
        assert.deepEqual(await holding(a, p.mandate.id), final === 'succeeded'
          ? { status: 'consumed', amount_used: 500, uses_count: 1 }
          : { status: 'active', amount_used: 0, uses_count: 0 })
      }
    })

    test('a server whose processor is not the sandbox answers 400 sandbox_only and moves nothing', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { max_amount: 2000 })
      const p = await pay(a, { mandate_id: m.id, amount: 100, payment_method: 'bank_transfer' })
      // The same store and payment, served by an app whose processor is a real one (not marked sandbox).
      const { sandbox: _sandbox, ...real } = createSandboxProcessor({ settlementDelayMs: SETTLE_MS })
      const services = createServices({ config: t.config, db: t.store.db, clock: t.clock, processor: { ...real, name: 'acme' } })
      const app = await buildApp({ config: t.config, db: t.store.db, clock: t.clock, services })
      try {
        const res = toResponse(await app.inject({ method: 'POST', url: `/payments/${p.id}/settle`, headers: { authorization: `Bearer ${a.key}` } }))
        const error = assertError(res, 400, 'invalid_request_error', 'sandbox_only')
        assert.match(error.message, /sandbox/)
      } finally {
        await app.close()
      }
      assert.equal((await getPayment(a, p.id)).status, 'pending')
    })
  })
}
