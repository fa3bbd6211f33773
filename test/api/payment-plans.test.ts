import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { createMandate, getMandate } from '../helpers/fixtures.js'
import { pendingAnswer } from '../helpers/idempotency.js'
import { storeKinds } from '../helpers/stores.js'
import type { CreatePaymentInput, Payment } from '../../src/modules/payments/schemas.js'
import { EVENT_COUNTER, PAYMENT_COUNTER } from '../../src/db/counters.js'
import { recordedCounts } from '../helpers/counts.js'

/**
 * Every kind of payment plan (modules/payments/plan.ts), written by each executor that takes it: the
 * general path (service.create, the plan applied through the repositories) and, for plans whose mandate
 * change is the hold's one update (keep, consume), the single write (createInOneWrite). Both must leave
 * the same rows: payment, its count, events (with their objects), jobs, mandate; and through HTTP exactly one
 * idempotency record that answers with the payment. A declined charge's plan (release) the single write
 * declines without a trace, and the general path then writes it.
 */

const KINDS = [
  { name: 'succeeded, multi-use (keep)', usage: 'multi_use', method: 'card', oneWrite: true, status: 'succeeded', mandate: 'active' },
  { name: 'pending, multi-use (keep + settle job)', usage: 'multi_use', method: 'bank_transfer', oneWrite: true, status: 'pending', mandate: 'active' },
  { name: 'pending, single-use (keep + settle job)', usage: 'single_use', method: 'bank_transfer', oneWrite: true, status: 'pending', mandate: 'active' },
  { name: 'succeeded, single-use (consume)', usage: 'single_use', method: 'card', oneWrite: true, status: 'succeeded', mandate: 'consumed' },
  { name: 'declined, multi-use (release)', usage: 'multi_use', method: 'test_card_declined', oneWrite: false, status: 'failed', mandate: 'active' },
  { name: 'declined, single-use (release)', usage: 'single_use', method: 'test_insufficient_funds', oneWrite: false, status: 'failed', mandate: 'active' },
] as const

for (const kind of storeKinds()) {
  describe(`payment plans, both executors (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    const db = () => t.store.db.kysely

    /** What one payment wrote in its account, ids and times left out. */
    async function footprint(a: TestAccount, mandateId: string) {
      const mandate = await getMandate(a, mandateId)
      const payments = await db().selectFrom('payments').selectAll().where('account_id', '=', a.id).orderBy('id').execute()
      const objectIds = [mandateId, ...payments.map((p) => p.id)]
      const events = await db().selectFrom('events').selectAll().where('account_id', '=', a.id)
        .where('object_id', 'in', objectIds).where('type', '!=', 'mandate.created').orderBy('id').execute()
      const eventIds = new Set(events.map((e) => e.id))
      const paymentIds = new Set(payments.map((p) => p.id))
      const jobs = (await db().selectFrom('jobs').selectAll().orderBy('id').execute()).filter((j) => {
        const payload = JSON.parse(j.payload) as { payment_id?: string, event_id?: string }
        return paymentIds.has(payload.payment_id ?? '') || eventIds.has(payload.event_id ?? '')
      })
      const records = await db().selectFrom('idempotency_keys').selectAll().where('account_id', '=', a.id).execute()
      return {
        mandate: { amount_used: mandate.amount_used, uses_count: mandate.uses_count, status: mandate.status },
        payments: payments.map(({ id: _i, account_id: _a, mandate_id: _m, created_at: _c, updated_at: _u, ...rest }) => rest),
        events: events.map((e) => ({ type: e.type, request_id: e.request_id, object: comparable((JSON.parse(e.data) as { object: Record<string, unknown> }).object) })),
        jobs: jobs.map((j) => ({ type: j.type, attempts: j.attempts, locked_until: j.locked_until })).sort((x, y) => x.type.localeCompare(y.type)),
        counts: await recordedCounts(t.store.db, PAYMENT_COUNTER, a.id),
        eventCounts: await recordedCounts(t.store.db, EVENT_COUNTER, a.id),
        records,
      }
    }

    /** An event's object without what differs between two accounts' copies: ids and times. */
    function comparable(object: Record<string, unknown>) {
      return Object.fromEntries(Object.entries(object).filter(([k]) => k !== 'id' && !k.endsWith('_id') && !k.endsWith('_at')))
    }

    async function accountWithEndpoint() {
      const a = await t.account()
      const res = await a.request('POST', '/webhook_endpoints', { url: 'https://8.8.8.8/hooks', events: ['*'] })
      assert.equal(res.status, 201, res.raw)
      return a
    }

    for (const plan of KINDS) {
      test(`${plan.name}: the same rows from either executor`, async () => {
        const mandateBody = { usage: plan.usage, budget_amount: 1000, max_amount: 500 }
        const input = { amount: 250, currency: 'USD', payment_method: plan.method, metadata: { order: '7' } }
        const requestId = 'req_plan'

        // The general path, called directly: no idempotency record.
        const general = await accountWithEndpoint()
        const m1 = await createMandate(t, general, mandateBody)
        const direct = await t.services.payments.create({ accountId: general.id, requestId }, { mandate_id: m1.id, ...input } as CreatePaymentInput)
        assert.equal(direct.status, plan.status)

        // The single write, where it takes the plan; it writes nothing otherwise.
        const single = await accountWithEndpoint()
        const m2 = await createMandate(t, single, mandateBody)
        const key = randomUUID()
        const before = await footprint(single, m2.id)
        const record = await t.services.payments.createInOneWrite({ accountId: single.id, requestId }, { mandate_id: m2.id, ...input } as CreatePaymentInput, pendingAnswer(t, single, key))
        assert.equal(record !== undefined, plan.oneWrite, 'the single write takes exactly the keep and consume plans')
        if (!record) {
          assert.deepEqual(await footprint(single, m2.id), before, 'a declined single write leaves no trace')
          // The general path, with its record, as a client reaches it.
          const res = await single.request('POST', '/payments', { mandate_id: m2.id, ...input, idempotency_key: key }, { headers: { 'x-request-id': requestId } })
          assert.equal(res.status, 201, res.raw)
        }

        const theirs = await footprint(general, m1.id)
        const mine = await footprint(single, m2.id)
        assert.equal(mine.mandate.status, plan.mandate)
        assert.deepEqual(mine.mandate, theirs.mandate)
        assert.deepEqual(mine.payments, theirs.payments)
        assert.deepEqual(mine.events.map((e) => [e.type, e.object]), theirs.events.map((e) => [e.type, e.object]))
        if (record) assert.deepEqual(mine.events, theirs.events)
        assert.deepEqual(mine.jobs, theirs.jobs)
        assert.deepEqual(mine.counts, theirs.counts)
        assert.deepEqual(mine.counts, { [plan.status]: 1 }, 'the payment counted once, in its status')
        assert.deepEqual(mine.eventCounts, theirs.eventCounts)
        assert.equal(theirs.records.length, 0)
        assert.equal(mine.records.length, 1, 'one idempotency record')
        assert.equal(mine.records[0]!.response_status, 201)
        const answered = (JSON.parse(mine.records[0]!.response_body) as { data: Payment }).data
        const stored = await db().selectFrom('payments').select(['id', 'status']).where('account_id', '=', single.id).executeTakeFirstOrThrow()
        assert.deepEqual({ id: answered.id, status: answered.status }, stored)
      })
    }
  })
}
