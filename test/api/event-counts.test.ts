import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { sql } from 'kysely'
import { createMigrator } from '../../src/db/migrate.js'
import { EVENT_RETENTION_DAYS, eventRetention } from '../../src/jobs/event-retention.js'
import { countEvents, deleteOlderThan, foldEventCounts } from '../../src/modules/events/repository.js'
import { EVENT_TYPES, type EventType } from '../../src/modules/events/types.js'
import { type Response, startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { ap2Setup, closedFor, onDemand, payAp2 } from '../helpers/ap2.js'
import { assertPaymentError } from '../helpers/assertions.js'
import { createMandate, createWish, DAY_MS, getList, HOUR, inFuture } from '../helpers/fixtures.js'
import { pay, refundRaw } from '../helpers/payments.js'
import { storeKinds } from '../helpers/stores.js'
import { updateWish } from '../helpers/wishes.js'

/**
 * `meta.total` of GET /events by account and type comes from counters (migration 0013), as payments'
 * do (test/api/payment-counts.test.ts): every write of events records a change in its own transaction,
 * event retention records the events it deletes, and a periodic fold moves the changes into the
 * counters. Whatever wrote or deleted the events, and however the folds interleave with them, each total
 * must equal what counting the stored events gives.
 */

const SETTLE_MS = 60_000

// ACP's official delegate_payment request, as test/api/acp-delegate-payment.test.ts sends it.
const ACP = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared/protocols/acp-2026-04-17')
const acpExamples = JSON.parse(fs.readFileSync(path.join(ACP, 'examples.delegate_payment.json'), 'utf8'))

/** The official request with its allowance and card kept unexpired (the example's dates have passed). */
function delegateBody(now: Date): any {
  const body = structuredClone(acpExamples.delegate_payment_request)
  body.allowance.expires_at = new Date(now.getTime() + HOUR).toISOString()
  body.payment_method.exp_year = String(now.getUTCFullYear() + 2)
  return body
}

/** The event types each write test must make, so that together they make every type there is. */
const WRITES: Record<string, readonly EventType[]> = {
  wishesAndMandates: ['wish.created', 'wish.updated', 'wish.deleted', 'mandate.created', 'mandate.revoked'],
  payments: ['payment.created', 'payment.succeeded', 'payment.failed', 'payment.processing', 'payment.refunded', 'mandate.consumed'],
  agentsKeysAp2Acp: ['agent.created', 'agent.disabled', 'trusted_key.created', 'trusted_key.revoked', 'mandate.created', 'mandate.revoked', 'mandate.consumed', 'payment.succeeded'],
  background: ['payment.processing', 'payment.succeeded', 'payment.failed', 'mandate.consumed', 'wish.updated', 'mandate.expired'],
}

test('the write tests below make every event type', () => {
  assert.deepEqual([...new Set(Object.values(WRITES).flat())].sort(), [...EVENT_TYPES].sort())
})

for (const kind of storeKinds()) {
  describe(`event counts behind meta.total (${kind.name})`, () => {
    let t: TestApp
    // Endpoints may point at the loopback address, so that every write also writes its deliveries.
    before(async () => { t = await startTestApp(kind, { SANDBOX_SETTLEMENT_DELAY_MS: String(SETTLE_MS), WEBHOOK_ALLOW_PRIVATE: 'true' }) })
    after(async () => { await t.close() })

    const db = () => t.store.db.kysely
    const fold = () => foldEventCounts(t.store.db)
    /** Folds until nothing is left: one fold takes a bounded number of accounts. */
    const foldAll = async () => { while ((await fold()) > 0) { /* more accounts */ } }
    // PostgreSQL writes count changes as rows that a fold moves into the counts; SQLite adds them to the
    // counts at once (db/counters.ts recordChanges), so no change waits there.
    const changesWait = kind.name === 'postgres'

    /** The account's events by type, counted from the rows themselves. */
    async function counted(a: TestAccount) {
      const rows = await db().selectFrom('events').select('type').where('account_id', '=', a.id).execute()
      const by: Record<string, number> = { all: rows.length }
      for (const type of EVENT_TYPES) by[type] = rows.filter((r) => r.type === type).length
      return by
    }

    /** meta.total of the unfiltered list and of each type filter, as a client reads them. */
    async function totals(a: TestAccount) {
      const by: Record<string, number> = { all: (await getList(a, '/events')).meta.total }
      for (const type of EVENT_TYPES) by[type] = (await getList(a, `/events?type=${type}`)).meta.total
      return by
    }

    const changesOf = async (a: TestAccount) =>
      (await db().selectFrom('event_count_changes').select('n').where('account_id', '=', a.id).execute()).length

    /**
     * Every total equals the rows counted, before a fold and after one, and the fold took every change of
     * the account. `made`: types these writes must have made, so the test exercises what it claims.
     */
    async function assertExact(a: TestAccount, made: readonly EventType[] = []) {
      const expected = await counted(a)
      for (const type of made) assert.ok(expected[type]! > 0, `no ${type} event was made`)
      assert.deepEqual(await totals(a), expected, 'before a fold')
      await foldAll()
      assert.equal(await changesOf(a), 0, 'the fold took every change of the account')
      assert.deepEqual(await totals(a), expected, 'after a fold')
      return expected
    }

    /** An endpoint that wants every event: nothing listens at port 9, which matters to no test here. */
    async function endpoint(a: TestAccount) {
      const res = await a.request('POST', '/webhook_endpoints', { url: 'http://127.0.0.1:9/hooks', events: ['*'] })
      assert.equal(res.status, 201, res.raw)
    }

    const ok = (res: Response, status: number) => { assert.equal(res.status, status, res.raw); return res.body.data }

    /** Runs the job runner until a pass finds no full batch: other tests' deliveries may be due first. */
    const runJobs = async () => { while (await t.jobs.runOnce()) { /* a full batch: more may be due */ } }

    test('wishes and mandates: group commit, transaction, replay, update, cancel, delete, revoke; refusals write nothing', async () => {
      const a = await t.account()
      await endpoint(a)
      // Without a key PostgreSQL writes the wish in a shared batch; with one, in the request's transaction.
      const plain = await createWish(a)
      const key = randomUUID()
      const keyed = ok(await a.request('POST', '/wishes', { query: 'a lamp' }, { headers: { 'idempotency-key': key } }), 201)
      const replay = await a.request('POST', '/wishes', { query: 'a lamp' }, { headers: { 'idempotency-key': key } })
      assert.equal(replay.headers['idempotent-replayed'], 'true')
      await updateWish(a, plain.id, { query: 'a blue kettle' })
      await updateWish(a, plain.id, { status: 'pending' })
      // A no-op and a refused update write no event.
      await updateWish(a, plain.id, { status: 'pending' })
      assert.equal((await a.request('PUT', `/wishes/${plain.id}`, { status: 'expired', query: '' })).status, 400)
      await assertExact(a)

      // A final wish, and a deleted one, revoke their mandates, each with its event.
      const cancelled = await createWish(a, { query: 'a tent' })
      const deleted = await createWish(a, { query: 'a stove' })
      for (const wish of [cancelled, cancelled, deleted]) await createMandate(t, a, { wish_id: wish.id })
      await updateWish(a, cancelled.id, { status: 'cancelled' })
      assert.equal((await a.request('PUT', `/wishes/${cancelled.id}`, { query: 'refused' })).status, 409)
      assert.equal((await a.request('DELETE', `/wishes/${deleted.id}`)).status, 204)
      const m = await createMandate(t, a)
      ok(await a.request('POST', `/mandates/${m.id}/revoke`, {}), 200)
      assert.equal((await a.request('POST', `/mandates/${m.id}/revoke`, {})).status, 409)
      await updateWish(a, keyed.id, { status: 'fulfilled' })
      const expected = await assertExact(a, WRITES.wishesAndMandates)
      assert.equal(expected['mandate.revoked'], 4)
    })

    test('payments: single write, general path, declined, pending, settlement, refunds; refusals write nothing', async () => {
      const a = await t.account()
      await endpoint(a)
      const multi = await createMandate(t, a, { usage: 'multi_use', budget_amount: 100_000, max_amount: 5_000 })
      // Single write: a card on a multi-use mandate, and one that consumes a single-use mandate.
      const succeeded = await pay(a, { mandate_id: multi.id, amount: 1000, payment_method: 'card' })
      const toRefund = await pay(a, { mandate_id: multi.id, amount: 700, payment_method: 'wallet' })
      const single = await createMandate(t, a, { max_amount: 500 })
      await pay(a, { mandate_id: single.id, amount: 500, payment_method: 'card' })
      assertPaymentError(await a.request('POST', '/payments', { mandate_id: single.id, amount: 10, idempotency_key: randomUUID() }), 'mandate_consumed')
      // A replayed payment writes nothing more.
      const key = randomUUID()
      const first = await a.request('POST', '/payments', { mandate_id: multi.id, amount: 20, idempotency_key: key })
      const again = await a.request('POST', '/payments', { mandate_id: multi.id, amount: 20, idempotency_key: key })
      assert.equal(again.raw, first.raw)
      // Pending: single write; declined: the general path, the hold released.
      const pending = await pay(a, { mandate_id: multi.id, amount: 300, payment_method: 'bank_transfer' })
      const failing = await pay(a, { mandate_id: multi.id, amount: 200, payment_method: 'test_bank_transfer_failed' })
      const declined = await pay(a, { mandate_id: multi.id, amount: 100, payment_method: 'test_card_declined' })
      assert.equal(declined.status, 'failed')
      await assertExact(a)

      // The general path, called directly: on the multi-use mandate, and consuming a single-use one.
      const ctx = { accountId: a.id, requestId: 'req_event_counts' }
      await t.services.payments.create(ctx, { mandate_id: multi.id, amount: 50, currency: 'USD', payment_method: 'card' })
      const single2 = await createMandate(t, a, { max_amount: 500 })
      await t.services.payments.create(ctx, { mandate_id: single2.id, amount: 400, currency: 'USD', payment_method: 'card' })
      // Settlement by request: pending -> processing -> succeeded, and -> failed; a pending payment on a
      // single-use mandate is consumed when it settles.
      const single3 = await createMandate(t, a, { max_amount: 500 })
      const pendingSingle = await pay(a, { mandate_id: single3.id, amount: 300, payment_method: 'bank_transfer' })
      for (const p of [pending, failing, pendingSingle]) ok(await a.request('POST', `/payments/${p.id}/settle`, {}), 200)
      assert.equal((await a.request('POST', `/payments/${pending.id}/settle`, {})).status, 409)
      // A partial refund, then the rest; a refund of a failed payment is refused.
      assert.equal((await refundRaw(a, succeeded.id, { amount: 100 })).status, 201)
      assert.equal((await refundRaw(a, succeeded.id)).status, 201)
      assert.equal((await refundRaw(a, toRefund.id)).status, 201)
      assertPaymentError(await refundRaw(a, declined.id), 'payment_not_refundable')
      const expected = await assertExact(a, WRITES.payments)
      assert.equal(expected['payment.refunded'], 3)
      assert.equal(expected['mandate.consumed'], 3)
    })

    test('agents, trusted keys, AP2 mandates and payments, ACP vault tokens and their payments', async () => {
      const a = await t.account()
      await endpoint(a)
      // AP2: a trusted key, an agent, a mandate from an open mandate; the agent pays (the general path).
      const s = await ap2Setup(t, onDemand(t), a)
      const paid = await payAp2(s, await closedFor(t, s, { amount: 1500 }), 1500)
      assert.equal(ok(paid, 201).status, 'succeeded')
      ok(await a.request('POST', `/agents/${s.agent.id}/disable`, {}), 200)
      assert.equal((await a.request('POST', `/agents/${s.agent.id}/disable`, {})).status, 409)
      ok(await a.request('POST', `/trusted_keys/${s.trustedKeyId}/revoke`, {}), 200)
      await assertExact(a)

      // ACP: a vault token is a single-use mandate; its payment consumes it; another is revoked.
      const delegate = async () => {
        const res = await a.request('POST', '/agentic_commerce/delegate_payment', delegateBody(t.clock.now()), { headers: { 'api-version': '2026-04-17', 'idempotency-key': randomUUID() } })
        assert.equal(res.status, 201, res.raw)
        return res.body.id as string
      }
      const token = await delegate()
      const redeemed = await a.request('POST', '/payments', {
        vault_token: token, merchant_id: 'acme_store', checkout_session_id: 'csn_01HV3P3XYZ9ABC', amount: 1500, currency: 'usd', idempotency_key: randomUUID(),
      })
      assert.equal(ok(redeemed, 201).status, 'succeeded')
      const revoked = await delegate()
      ok(await a.request('POST', `/vault_tokens/${revoked}/revoke`, {}), 200)
      await assertExact(a, WRITES.agentsKeysAp2Acp)
    })

    test('background work: the settlement job and the expiry sweep', async () => {
      const a = await t.account()
      await endpoint(a)
      const long = { expires_at: inFuture(t, 10 * HOUR) }
      const single = await createMandate(t, a, { max_amount: 500, ...long })
      const multi = await createMandate(t, a, { usage: 'multi_use', budget_amount: 10_000, ...long })
      const settling = await pay(a, { mandate_id: single.id, amount: 300, payment_method: 'bank_transfer' })
      const failing = await pay(a, { mandate_id: multi.id, amount: 200, payment_method: 'test_bank_transfer_failed' })
      await runJobs()
      t.clock.advance(SETTLE_MS)
      await runJobs()
      const statusOf = async (id: string) => (await db().selectFrom('payments').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status
      assert.deepEqual([await statusOf(settling.id), await statusOf(failing.id)], ['succeeded', 'failed'])
      await assertExact(a)

      // A wish and a mandate lapse; the sweep stores them expired, with their events.
      const wish = await createWish(a, { query: 'a clock', expires_at: inFuture(t, HOUR) })
      await createMandate(t, a, { wish_id: wish.id, expires_at: inFuture(t, HOUR) })
      await createMandate(t, a, { expires_at: inFuture(t, HOUR) })
      t.clock.advance(2 * HOUR)
      while ((await t.services.wishes.expireLapsed(200)) === 200) { /* next batch */ }
      const expected = await assertExact(a, WRITES.background)
      assert.equal(expected['mandate.expired'], 2)
    })

    test('event retention takes what it deletes off the counts, in several batches, across accounts and types', async () => {
      const a = await t.account()
      const b = await t.account()
      const m = await createMandate(t, a, { usage: 'multi_use', budget_amount: 100_000 })
      for (let i = 0; i < 4; i++) await createWish(a, { query: `wish ${i}` })
      for (let i = 0; i < 3; i++) await pay(a, { mandate_id: m.id, amount: 100 + i, payment_method: i === 2 ? 'test_card_declined' : 'card' })
      await createWish(b, { query: 'b' })
      await createMandate(t, b)
      // Some of the changes are folded, others not yet: retention must take its events off both.
      await foldAll()
      for (let i = 0; i < 2; i++) await createWish(a, { query: `late ${i}` })
      await createWish(b, { query: 'b late' })

      // Age every wish.created and payment.created of a, and all of b but one event.
      const old = new Date(t.clock.now().getTime() - (EVENT_RETENTION_DAYS + 1) * DAY_MS).toISOString()
      await db().updateTable('events').set({ created_at: old })
        .where('account_id', '=', a.id).where('type', 'in', ['wish.created', 'payment.created']).execute()
      const bKept = await db().selectFrom('events').select('id').where('account_id', '=', b.id).orderBy('id').executeTakeFirstOrThrow()
      await db().updateTable('events').set({ created_at: old }).where('account_id', '=', b.id).where('id', '!=', bKept.id).execute()

      // By hand, 3 at a time: every batch's deletions are counted when it commits.
      const before = new Date(t.clock.now().getTime() - EVENT_RETENTION_DAYS * DAY_MS).toISOString()
      let batches = 0
      for (;;) {
        const deleted = await deleteOlderThan(t.store.db, before, 3)
        if (deleted > 0) batches++
        for (const account of [a, b]) assert.deepEqual(await totals(account), await counted(account), `after batch ${batches}`)
        if (deleted < 3) break
      }
      assert.ok(batches >= 4, `${batches} batches`)
      const left = await assertExact(a)
      assert.equal(left['wish.created'], 0)
      assert.equal(left['payment.created'], 0)
      assert.equal(left['payment.succeeded'], 2)
      assert.deepEqual((await assertExact(b)).all, 1)

      // The periodic task, as the job runner runs it, on events aged once more.
      await db().updateTable('events').set({ created_at: old }).where('account_id', '=', a.id).where('type', '=', 'payment.succeeded').execute()
      await eventRetention({ db: t.store.db, clock: t.clock }).run()
      assert.equal((await assertExact(a))['payment.succeeded'], 0)
    })

    test('writes at once with folds running among them: every total exact; two folds at once', async () => {
      const a = await t.account()
      const mandates = await Promise.all(Array.from({ length: 4 }, () => createMandate(t, a, { usage: 'multi_use', budget_amount: 1_000_000, max_amount: 5_000 })))
      const toSettle = await Promise.all(Array.from({ length: 6 }, (_, i) => pay(a, { mandate_id: mandates[i % 4]!.id, amount: 100, payment_method: 'bank_transfer' })))
      const toRefund = await Promise.all(Array.from({ length: 6 }, (_, i) => pay(a, { mandate_id: mandates[i % 4]!.id, amount: 100, payment_method: 'card' })))
      const toUpdate = await Promise.all(Array.from({ length: 6 }, (_, i) => createWish(a, { query: `to update ${i}` })))
      const methods = ['card', 'bank_transfer', 'test_card_declined', 'wallet']
      const writes: Promise<unknown>[] = [
        // Half with a key (the request's transaction), half without (PostgreSQL's shared batch).
        ...Array.from({ length: 40 }, (_, i) => a.request('POST', '/wishes', { query: `burst ${i}` }, i % 2 === 0 ? { headers: { 'idempotency-key': randomUUID() } } : {}).then((r) => ok(r, 201))),
        ...Array.from({ length: 40 }, (_, i) => pay(a, { mandate_id: mandates[i % 4]!.id, amount: 10 + i, payment_method: methods[i % 4] })),
        ...toSettle.map((p) => a.request('POST', `/payments/${p.id}/settle`, {}).then((r) => ok(r, 200))),
        ...toRefund.map((p, i) => refundRaw(a, p.id, i % 2 === 0 ? { amount: 40 } : {}).then((r) => ok(r, 201))),
        ...toUpdate.map((w, i) => updateWish(a, w.id, i % 2 === 0 ? { query: 'updated' } : { status: 'cancelled' })),
      ]
      // Folds at the outset, and two at once each time a tenth write answers: they overlap the writes
      // still in flight and each other. (Not a loop of folds: on SQLite a fold with nothing to do never
      // leaves the microtask queue, and would starve the writes.)
      const folds = [
        ...Array.from({ length: 4 }, () => fold()),
        ...writes.filter((_, i) => i % 10 === 9).map((w) => w.then(() => Promise.all([fold(), fold()]))),
      ]
      await Promise.all([...writes, ...folds])
      let expected = await counted(a)
      assert.equal(expected['wish.created'], 46)
      assert.equal(expected['payment.created'], 52)
      assert.equal(expected['payment.processing'], 6)
      assert.equal(expected['payment.refunded'], 6)
      assert.deepEqual(await totals(a), expected)

      // Many changes waiting, then two folds at once: each change is folded once.
      await Promise.all(Array.from({ length: 20 }, (_, i) => createWish(a, { query: `more ${i}` })))
      assert.equal(await changesOf(a) > 0, changesWait)
      await Promise.all([fold(), fold()])
      await Promise.all([foldAll(), foldAll(), foldAll()])
      assert.equal(await changesOf(a), 0)
      expected = await counted(a)
      assert.equal(expected['wish.created'], 66)
      assert.deepEqual(await totals(a), expected, 'concurrent folds count each change once')
    })

    test('migration 0013 counts the events that existed before it, and goes down and up again', async () => {
      const store = await kind.open()
      try {
        const migrator = await createMigrator(store.db)
        assert.equal((await migrator.migrateTo('0012_payment_counts')).error, undefined)
        const db = store.db.kysely
        const stamp = '2026-01-01T00:00:00.000Z'
        let n = 0
        /** An event as a version before 0013 wrote it: the row alone. */
        const insertEvent = (accountId: string, type: EventType) => sql`insert into events (id, account_id, type, object_id, data, request_id, created_at)
          values (${`evt_old${n++}`}, ${accountId}, ${type}, 'wish_x', '{"object":{"id":"wish_x"}}', null, ${stamp})`.execute(db)
        for (const id of ['acct_old', 'acct_other']) await sql`insert into accounts (id, name, created_at) values (${id}, ${id}, ${stamp})`.execute(db)
        const types: EventType[] = ['wish.created', 'wish.created', 'wish.created', 'wish.updated', 'mandate.created', 'payment.created', 'payment.succeeded']
        for (const type of types) await insertEvent('acct_old', type)
        await insertEvent('acct_other', 'wish.created')

        const count = (type?: EventType) => countEvents(db, 'acct_old', type)
        let expected = { all: 7, 'wish.created': 3, 'wish.updated': 1, 'payment.succeeded': 1, 'payment.failed': 0 }
        for (let round = 0; round < 2; round++) {
          assert.equal((await migrator.migrateToLatest()).error, undefined)
          assert.deepEqual({
            all: await count(), 'wish.created': await count('wish.created'), 'wish.updated': await count('wish.updated'),
            'payment.succeeded': await count('payment.succeeded'), 'payment.failed': await count('payment.failed'),
          }, expected, `round ${round}`)
          assert.equal(await countEvents(db, 'acct_other', undefined), 1)
          if (round === 0) {
            assert.equal((await migrator.migrateTo('0012_payment_counts')).error, undefined)
            // Written while the counters were gone: going up again counts it too.
            await insertEvent('acct_old', 'wish.created')
            expected = { ...expected, all: 8, 'wish.created': 4 }
          }
        }
      } finally {
        await store.close()
      }
    })

    test('an account with no events has totals of 0; another account\'s events are not counted', async () => {
      const empty = await t.account()
      const other = await t.account()
      const m = await createMandate(t, other, { usage: 'multi_use', budget_amount: 10_000, max_amount: 500 })
      await pay(other, { mandate_id: m.id, amount: 100, payment_method: 'card' })
      await createWish(other)
      for (const total of Object.values(await totals(empty))) assert.equal(total, 0)
      await foldAll()
      for (const total of Object.values(await totals(empty))) assert.equal(total, 0)
      assert.equal((await assertExact(other)).all, 4)
      // A read key reads the same total.
      const read = await other.request('GET', '/events', undefined, { key: other.readKey })
      assert.equal(read.body.meta.total, 4)
    })
  })
}
