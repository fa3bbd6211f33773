import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { createMandate, getMandate, inFuture } from '../helpers/fixtures.js'
import { pendingAnswer } from '../helpers/idempotency.js'
import { storeKinds } from '../helpers/stores.js'
import { toTimestamp } from '../../src/lib/clock.js'
import * as mandates from '../../src/modules/mandates/repository.js'
import { createSandboxProcessor } from '../../src/modules/payments/processors/sandbox.js'
import { createSingleWrite } from '../../src/modules/payments/single-write.js'
import type { CreatePaymentInput, Payment } from '../../src/modules/payments/schemas.js'
import { EVENT_COUNTER, PAYMENT_COUNTER } from '../../src/db/counters.js'
import { recordedCounts } from '../helpers/counts.js'
import { ROW_STEPS_MAX } from '../../src/db/pg-statement.js'

/**
 * The single write of a common payment (modules/payments/single-write.ts) against the general path it
 * stands in for: the same rows, and nothing at all written whenever it leaves the decision to the
 * general path.
 */

const HOUR = 3_600_000

for (const kind of storeKinds()) {
  describe(`payment single write (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind, { SANDBOX_SETTLEMENT_DELAY_MS: '1000' }) })
    after(async () => { await t.close() })

    const db = () => t.store.db.kysely

    /** createInOneWrite as the idempotency layer calls it, with a record for (account, key). */
    function writeOnce(a: TestAccount, input: Partial<CreatePaymentInput> & { mandate_id: string }, key: string = randomUUID()) {
      const pending = pendingAnswer(t, a, key)
      const full = { amount: 100, currency: 'USD', payment_method: 'card', ...input } as CreatePaymentInput
      return t.services.payments.createInOneWrite({ accountId: a.id, requestId: 'req_single' }, full, pending)
    }

    /** Everything of the account a payment writes, with ids and times left out. */
    async function footprint(a: TestAccount, mandateId: string) {
      const mandate = await getMandate(a, mandateId)
      const payments = await db().selectFrom('payments').selectAll().where('account_id', '=', a.id).orderBy('id').execute()
      const events = await db().selectFrom('events').selectAll().where('account_id', '=', a.id).where('type', 'like', 'payment.%').orderBy('id').execute()
      const paymentIds = new Set(payments.map((p) => p.id))
      const eventIds = new Set(events.map((e) => e.id))
      const jobs = (await db().selectFrom('jobs').selectAll().orderBy('id').execute()).filter((j) => {
        const payload = JSON.parse(j.payload) as { payment_id?: string, event_id?: string }
        return paymentIds.has(payload.payment_id ?? '') || eventIds.has(payload.event_id ?? '')
      })
      const keys = await db().selectFrom('idempotency_keys').select(['idempotency_key']).where('account_id', '=', a.id).execute()
      return {
        mandate: { amount_used: mandate.amount_used, uses_count: mandate.uses_count, status: mandate.status },
        payments: payments.map(({ id: _id, created_at: _c, updated_at: _u, ...rest }) => rest),
        events: events.map((e) => {
          const { object } = JSON.parse(e.data) as { object: Payment }
          // Amount and metadata too: the data each path wrote is the payment's JSON intact.
          return { type: e.type, request_id: e.request_id, object: object.status, amount: object.amount, metadata: object.metadata }
        }),
        jobs: jobs.map((j) => ({ type: j.type, attempts: j.attempts, locked_until: j.locked_until })).sort((x, y) => x.type.localeCompare(y.type)),
        counts: await recordedCounts(t.store.db, PAYMENT_COUNTER, a.id),
        eventCounts: await recordedCounts(t.store.db, EVENT_COUNTER, a.id),
        keys: keys.length,
      }
    }

    async function accountWithEndpoint() {
      const a = await t.account()
      const res = await a.request('POST', '/webhook_endpoints', { url: 'https://8.8.8.8/hooks', events: ['*'] })
      assert.equal(res.status, 201, res.raw)
      return a
    }

    for (const method of ['card', 'bank_transfer']) {
      test(`${method}: the same rows as the general path, and the record answers with the payment`, async () => {
        const single = await accountWithEndpoint()
        const general = await accountWithEndpoint()
        const input = { amount: 250, payment_method: method, metadata: { order: '42' } }
        const m1 = await createMandate(t, single, { usage: 'multi_use', budget_amount: 1000, max_amount: 500 })
        const m2 = await createMandate(t, general, { usage: 'multi_use', budget_amount: 1000, max_amount: 500 })

        const record = await writeOnce(single, { mandate_id: m1.id, ...input })
        assert.ok(record, 'the single write took the payment')
        const answered = (JSON.parse(record.response_body) as { data: Payment }).data
        await t.services.payments.create({ accountId: general.id, requestId: 'req_single' }, { mandate_id: m2.id, currency: 'USD', ...input } as CreatePaymentInput)

        const mine = await footprint(single, m1.id)
        const theirs = await footprint(general, m2.id)
        assert.deepEqual(mine.payments.map((p) => ({ ...p, account_id: '', mandate_id: '' })), theirs.payments.map((p) => ({ ...p, account_id: '', mandate_id: '' })))
        assert.deepEqual(mine.events, theirs.events)
        assert.deepEqual(mine.jobs, theirs.jobs)
        assert.deepEqual(mine.counts, theirs.counts)
        assert.deepEqual(mine.eventCounts, theirs.eventCounts)
        assert.deepEqual(mine.mandate, theirs.mandate)
        assert.equal(mine.keys, 1)
        assert.equal(theirs.keys, 0, 'the general path called directly saves no record')
        const stored = await db().selectFrom('payments').selectAll().where('id', '=', answered.id).executeTakeFirstOrThrow()
        assert.equal(stored.amount, 250)
        assert.equal(answered.status, method === 'card' ? 'succeeded' : 'pending')
      })
    }

    // A single-use mandate's payment writes three events (created, succeeded, mandate.consumed): with one
    // endpoint three jobs, each event and job a row of its own in PostgreSQL's statement; with three, nine
    // jobs, past ROW_STEPS_MAX (db/pg-statement.ts), which go as one JSON parameter.
    test('one endpoint\'s jobs go as row steps, three endpoints\' as JSON: the cases below straddle ROW_STEPS_MAX', () => {
      assert.ok(ROW_STEPS_MAX >= 3 && ROW_STEPS_MAX < 9, String(ROW_STEPS_MAX))
    })
    for (const endpointCount of [1, 3]) {
      test(`a single-use mandate consumed, ${endpointCount} endpoint(s): the same events and jobs as the general path`, async () => {
        const withEndpoints = async () => {
          const a = await t.account()
          for (let i = 0; i < endpointCount; i++) {
            const res = await a.request('POST', '/webhook_endpoints', { url: `https://8.8.8.8/hooks/${i}`, events: ['*'] })
            assert.equal(res.status, 201, res.raw)
          }
          return a
        }
        const single = await withEndpoints()
        const general = await withEndpoints()
        const input = { amount: 300, payment_method: 'card', metadata: { note: 'it\'s "$w$" \\ €' } }
        const m1 = await createMandate(t, single, { max_amount: 500 })
        const m2 = await createMandate(t, general, { max_amount: 500 })
        assert.ok(await writeOnce(single, { mandate_id: m1.id, ...input }), 'the single write took the payment')
        await t.services.payments.create({ accountId: general.id, requestId: 'req_single' }, { mandate_id: m2.id, currency: 'USD', ...input } as CreatePaymentInput)

        /** The account's events without ids and times, and how many delivery jobs each has. */
        const written = async (a: TestAccount) => {
          const events = await db().selectFrom('events').selectAll().where('account_id', '=', a.id).orderBy('id').execute()
          const jobs = await db().selectFrom('jobs').select('payload').where('type', '=', 'webhook.deliver').execute()
          const jobsOf = (eventId: string) => jobs.filter((j) => (JSON.parse(j.payload) as { event_id: string }).event_id === eventId).length
          return events.filter((e) => e.type !== 'mandate.created').map((e) => {
            const { object } = JSON.parse(e.data) as { object: Record<string, unknown> }
            const { id: _id, created_at: _c, updated_at: _u, mandate_id: _m, last_payment_at: _l, expires_at: _e, ...rest } = object
            return { type: e.type, request_id: e.request_id, object: rest, jobs: jobsOf(e.id) }
          })
        }
        const mine = await written(single)
        assert.deepEqual(mine.map((e) => [e.type, e.jobs]), [['payment.created', endpointCount], ['payment.succeeded', endpointCount], ['mandate.consumed', endpointCount]])
        assert.deepEqual(mine, await written(general))
        assert.deepEqual((await footprint(single, m1.id)).mandate, { amount_used: 300, uses_count: 1, status: 'consumed' })
      })
    }

    test('written together (one transaction on PostgreSQL, statements sent as one) or one by one: the same rows', async () => {
      // One batch in flight at a time, so that what arrives meanwhile is certainly grouped.
      const grouped = createSingleWrite({ db: t.store.db, clock: t.clock, processor: createSandboxProcessor({ settlementDelayMs: 1000 }) }, { maxInFlight: 1 })
      const together = await accountWithEndpoint()
      const oneByOne = await accountWithEndpoint()
      const m1 = await createMandate(t, together, { usage: 'multi_use', budget_amount: 10_000, max_amount: 500 })
      const m2 = await createMandate(t, oneByOne, { usage: 'multi_use', budget_amount: 10_000, max_amount: 500 })
      const input = (i: number) => ({ amount: 100 + i, payment_method: i % 2 === 0 ? 'card' : 'bank_transfer', metadata: { note: `it's "${i}" \\ €` } })
      const write = (a: TestAccount, mandateId: string, i: number) => grouped({ accountId: a.id, requestId: 'req_single' }, { currency: 'USD', mandate_id: mandateId, ...input(i) } as CreatePaymentInput, pendingAnswer(t, a, `key-${i}`))
      const records = await Promise.all(Array.from({ length: 12 }, (_, i) => write(together, m1.id, i)))
      for (let i = 0; i < 12; i++) await write(oneByOne, m2.id, i)
      assert.ok(records.every((r) => r !== undefined), 'every payment was taken')

      const byAmount = <T extends { amount: number }>(rows: T[]) => [...rows].sort((x, y) => x.amount - y.amount)
      const mine = await footprint(together, m1.id)
      const theirs = await footprint(oneByOne, m2.id)
      assert.deepEqual(byAmount(mine.payments).map((p) => ({ ...p, account_id: '', mandate_id: '' })), byAmount(theirs.payments).map((p) => ({ ...p, account_id: '', mandate_id: '' })))
      assert.deepEqual([...mine.events].sort((x, y) => x.type.localeCompare(y.type) || x.object.localeCompare(y.object)), [...theirs.events].sort((x, y) => x.type.localeCompare(y.type) || x.object.localeCompare(y.object)))
      assert.deepEqual(mine.jobs, theirs.jobs)
      assert.deepEqual(mine.counts, theirs.counts)
      assert.deepEqual(mine.counts, { pending: 6, succeeded: 6 }, 'each payment counted once')
      assert.deepEqual(mine.eventCounts, theirs.eventCounts)
      assert.deepEqual(mine.mandate, theirs.mandate)
      assert.equal(mine.keys, 12)
      if (kind.name === 'postgres') {
        // xmin: the transaction that wrote the row. Grouped, twelve payments took fewer transactions.
        const tx = async (a: TestAccount) => new Set((await sql<{ tx: string }>`select xmin::text as tx from payments where account_id = ${a.id}`.execute(db())).rows.map((r) => r.tx)).size
        assert.ok(await tx(together) < 12, 'some payments shared a transaction')
        assert.equal(await tx(oneByOne), 12)
      }
    })

    test('leaves to the general path, having written nothing: every refusal, a declined charge, a used single-use mandate', async () => {
      const a = await accountWithEndpoint()
      const other = await t.account()
      const multi = { usage: 'multi_use', budget_amount: 1000, max_amount: 500 }
      const cases: Array<[string, () => Promise<string>, Partial<CreatePaymentInput>]> = [
        ['unknown mandate', async () => 'mdt_unknown', {}],
        ["another account's mandate", async () => (await createMandate(t, other, multi)).id, {}],
        ['over max_amount', async () => (await createMandate(t, a, multi)).id, { amount: 501 }],
        ['over the budget', async () => (await createMandate(t, a, { ...multi, max_amount: 1000, budget_amount: 300 })).id, { amount: 301 }],
        ['other currency', async () => (await createMandate(t, a, multi)).id, { currency: 'EUR' }],
        ['revoked', async () => {
          const m = await createMandate(t, a, multi)
          const revoked = await a.request('POST', `/mandates/${m.id}/revoke`, {})
          assert.equal(revoked.status, 200, revoked.raw)
          return m.id
        }, {}],
        ['not yet valid', async () => (await createMandate(t, a, { ...multi, not_before: inFuture(t, 60_000) })).id, {}],
        ['declined charge', async () => (await createMandate(t, a, multi)).id, { payment_method: 'test_card_declined' }],
        ['unknown payment method', async () => (await createMandate(t, a, multi)).id, { payment_method: 'cash' }],
        ['declined charge, single-use', async () => (await createMandate(t, a, { max_amount: 500 })).id, { payment_method: 'test_insufficient_funds' }],
        ['single-use mandate already used', async () => {
          const m = await createMandate(t, a, { max_amount: 500 })
          const paid = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, payment_method: 'bank_transfer', idempotency_key: 'setup' })
          assert.equal(paid.status, 201, paid.raw)
          return m.id
        }, {}],
      ]
      for (const [name, mandateOf, input] of cases) {
        const mandateId = await mandateOf()
        const owner = name === "another account's mandate" ? other : a
        const before = mandateId === 'mdt_unknown' ? undefined : await footprint(owner, mandateId)
        assert.equal(await writeOnce(a, { mandate_id: mandateId, ...input }), undefined, name)
        if (before) assert.deepEqual(await footprint(owner, mandateId), before, name)
      }
      const keys = await db().selectFrom('idempotency_keys').select('idempotency_key').where('account_id', '=', a.id).execute()
      assert.deepEqual(keys, [{ idempotency_key: 'setup' }], 'only the setup payment has a record')
    })

    test("a single-use mandate changed since the single write read it: the hold refuses, so the consumed event is never stale", async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { max_amount: 500 })
      const read = await mandates.findMandate(db(), a.id, m.id)
      const hold = { accountId: a.id, mandateId: m.id, amount: 100, currency: 'USD', now: toTimestamp(t.clock.now()), consume: true }
      assert.equal(await mandates.hold(db(), { ...hold, unchangedSince: '2000-01-01T00:00:00.000Z' }), undefined)
      assert.equal((await getMandate(a, m.id)).status, 'active')
      const held = await mandates.hold(db(), { ...hold, unchangedSince: read!.updated_at })
      assert.equal(held?.status, 'consumed')
      assert.equal(held?.amount_used, 100)
    })

    test('a key that already has a record, live or expired: nothing written, the general path decides', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { usage: 'multi_use', budget_amount: 1000, max_amount: 500, expires_at: inFuture(t, 48 * HOUR) })
      const first = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: 'k-live' })
      assert.equal(first.status, 201, first.raw)
      const before = await footprint(a, m.id)
      assert.equal(await writeOnce(a, { mandate_id: m.id }, 'k-live'), undefined)
      assert.deepEqual(await footprint(a, m.id), before)

      t.clock.advance(t.config.idempotencyTtlSeconds * 1000 + 1000)
      assert.equal(await writeOnce(a, { mandate_id: m.id }, 'k-live'), undefined)
      assert.deepEqual(await footprint(a, m.id), before)
      // Sent at once, a taken key and new ones: on SQLite they share a group commit, whose pieces have no
      // savepoint; the taken key is turned away before its first write, so the others are kept.
      const together = await Promise.all([writeOnce(a, { mandate_id: m.id }), writeOnce(a, { mandate_id: m.id }, 'k-live'), writeOnce(a, { mandate_id: m.id })])
      assert.deepEqual(together.map((record) => record === undefined), [false, true, false])
      const after = await footprint(a, m.id)
      assert.equal(after.payments.length, before.payments.length + 2)
      assert.equal(after.keys, before.keys + 2)
      assert.equal(after.mandate.amount_used, before.mandate.amount_used + 200)
      // Past its retention the key is new again: the general path overwrites the record.
      const again = await a.request('POST', '/payments', { mandate_id: m.id, amount: 100, idempotency_key: 'k-live' })
      assert.equal(again.status, 201, again.raw)
      assert.notEqual(again.body.data.id, first.body.data.id)
      assert.equal(again.headers['idempotent-replayed'], undefined)
    })

    test('an account with 2,100 endpoints: every delivery job is written, on both paths (no bound-parameter limit)', async () => {
      const a = await t.account()
      const now = toTimestamp(t.clock.now())
      const endpoints = Array.from({ length: 2100 }, (_, i) => ({
        id: `we_bulk${a.id.slice(-8)}${i}`,
        account_id: a.id,
        url: `https://8.8.8.8/hooks/${i}`,
        events: '["*"]',
        description: null,
        secret: 'whsec_test',
        status: 'enabled' as const,
        disabled_reason: null,
        created_at: now,
        updated_at: now,
      }))
      for (let i = 0; i < endpoints.length; i += 500) await db().insertInto('webhook_endpoints').values(endpoints.slice(i, i + 500)).execute()
      const jobsOf = async (paymentId: string) => {
        const events = await db().selectFrom('events').select('id').where('object_id', '=', paymentId).execute()
        const ids = new Set(events.map((e) => e.id))
        const jobs = await db().selectFrom('jobs').select('payload').where('type', '=', 'webhook.deliver').execute()
        return jobs.filter((j) => ids.has((JSON.parse(j.payload) as { event_id: string }).event_id)).length
      }
      const multi = await createMandate(t, a, { usage: 'multi_use', budget_amount: 1000, max_amount: 500 })
      const single = await writeOnce(a, { mandate_id: multi.id })
      assert.ok(single)
      assert.equal(await jobsOf((JSON.parse(single.response_body) as { data: Payment }).data.id), 2 * 2100)
      const general = await t.services.payments.create({ accountId: a.id, requestId: null }, { mandate_id: multi.id, amount: 100, currency: 'USD', payment_method: 'card' })
      assert.equal(await jobsOf(general.id), 2 * 2100)
    })

    test('120 concurrent single writes of 50 (60 keys, each sent twice at once) on a budget of 1000: 20 taken, each key once', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { usage: 'multi_use', budget_amount: 1000, max_amount: 50 })
      const keys = Array.from({ length: 60 }, () => randomUUID())
      const answers = await Promise.all(keys.flatMap((key) => [writeOnce(a, { mandate_id: m.id, amount: 50 }, key), writeOnce(a, { mandate_id: m.id, amount: 50 }, key)]))
      const taken = answers.filter((r) => r !== undefined)
      assert.equal(taken.length, 20, 'exactly the budget is taken')
      const mandate = await getMandate(a, m.id)
      assert.equal(mandate.amount_used, 1000)
      assert.equal(mandate.uses_count, 20)
      const payments = await db().selectFrom('payments').select('amount').where('mandate_id', '=', m.id).execute()
      assert.equal(payments.length, 20)
      const records = await db().selectFrom('idempotency_keys').select('idempotency_key').where('account_id', '=', a.id).execute()
      assert.equal(records.length, 20, 'one record per payment, and each key at most once')
      assert.equal(new Set(records.map((r) => r.idempotency_key)).size, 20)
    })
  })
}
