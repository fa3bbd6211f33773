import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, afterEach, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import { createMigrator } from '../../src/db/migrate.js'
import { EVENT_RETENTION_DAYS, eventRetention } from '../../src/jobs/event-retention.js'
import { createJobRunner } from '../../src/jobs/runner.js'
import { webhookDeliveryHandler } from '../../src/jobs/webhook-delivery.js'
import { DELIVER_JOB } from '../../src/modules/events/outbox.js'
import { countAttemptsOfEndpoint, deleteAttemptsOlderThan, foldAttemptCounts } from '../../src/modules/webhooks/repository.js'
import { createWebhookService } from '../../src/modules/webhooks/service.js'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { createMandate, createWish, DAY_MS } from '../helpers/fixtures.js'
import type { Receiver, Responder } from '../helpers/receiver.js'
import { storeKinds } from '../helpers/stores.js'
import { updateWish } from '../helpers/wishes.js'
import { endpointFor, listAttempts, receiverIn } from '../helpers/webhooks.js'

/**
 * `meta.total` of GET /webhook_endpoints/:id/deliveries comes from counters (migration 0014), as the
 * totals of payments and events do (test/api/payment-counts.test.ts, event-counts.test.ts): every
 * delivery attempt recorded inserts a change in its own transaction, retention records the attempts it
 * deletes, and a periodic fold moves the changes into the counters. However the attempts were recorded
 * or deleted, and however the folds interleave with them, each endpoint's total must equal what counting
 * its stored attempts gives.
 */

const silent = { info() {}, warn() {}, error() {} }

/**
 * A receiver's answers: 500 to the first two deliveries of each event, then 200, so that every event
 * makes exactly three attempts (the first retry is due 5 ms after, the second 300 ms, at the scale below).
 */
function failingTwice(): Responder {
  const seen = new Map<string, number>()
  return (delivery) => {
    const id = delivery.headers['webhook-id'] ?? ''
    const n = seen.get(id) ?? 0
    seen.set(id, n + 1)
    return { status: n < 2 ? 500 : 200 }
  }
}

for (const kind of storeKinds()) {
  describe(`delivery attempt counts behind meta.total (${kind.name})`, () => {
    /** Endpoints may point at the loopback receivers; retries wait a thousandth of their time. */
    let t: TestApp
    const receivers: Receiver[] = []
    before(async () => { t = await startTestApp(kind, { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCALE: '0.001' }) })
    after(async () => { await t.close() })
    // Each test starts with no receiver and no queued work of an earlier one.
    afterEach(async () => {
      for (const r of receivers.splice(0)) await r.close()
      await t.store.db.kysely.deleteFrom('jobs').execute()
    })

    const db = () => t.store.db.kysely
    const fold = () => foldAttemptCounts(t.store.db)
    /** Folds until nothing is left: one fold takes a bounded number of accounts. */
    const foldAll = async () => { while ((await fold()) > 0) { /* more accounts */ } }
    // PostgreSQL writes count changes as rows that a fold moves into the counts; SQLite adds them to the
    // counts at once (db/counters.ts recordChanges), so no change waits there.
    const changesWait = kind.name === 'postgres'

    /**
     * A job runner with the app's delivery handler and no periodic task: the app's runner (t.jobs) also
     * runs the count fold, and these tests fold when they choose to.
     */
    const deliveryRunner = () => createJobRunner({
      db: t.store.db,
      clock: t.clock,
      logger: silent,
      handlers: webhookDeliveryHandler(createWebhookService({ db: t.store.db, clock: t.clock, config: t.config })),
    })
    let runner: ReturnType<typeof deliveryRunner>
    before(() => { runner = deliveryRunner() })

    /** Runs a runner until a pass finds no full batch: nothing due is left in this pass. */
    const drain = async (r: { runOnce(): Promise<boolean> } = runner) => { while (await r.runOnce()) { /* a full batch: more may be due */ } }

    type Endpoints = Array<[TestAccount, { id: string }]>

    /**
     * Deliveries still queued for these endpoints. Only theirs: once a test has moved the clock on, the
     * expiry sweep of the app's runner expires earlier tests' mandates, whose deliveries go to receivers
     * closed since, and are retried for a long while.
     */
    async function queuedFor(endpoints: Endpoints): Promise<number> {
      const ids = new Set(endpoints.map(([, ep]) => ep.id))
      const rows = await db().selectFrom('jobs').select('payload').where('type', '=', DELIVER_JOB).execute()
      return rows.filter((r) => ids.has((JSON.parse(r.payload) as { endpoint_id: string }).endpoint_id)).length
    }

    /** Runs `pass`, and moves the clock past the next retry, until no delivery to these endpoints is left queued. */
    async function settle(endpoints: Endpoints, pass: () => Promise<unknown> = () => drain()): Promise<void> {
      for (let round = 0; ; round++) {
        await pass()
        if ((await queuedFor(endpoints)) === 0) return
        assert.ok(round < 30, 'the deliveries settle')
        t.clock.advance(1000)
      }
    }

    /** The endpoint's attempts, counted from the rows themselves. */
    const counted = async (endpointId: string) =>
      Number((await db().selectFrom('webhook_attempts').select((eb) => eb.fn.countAll<number>().as('n')).where('endpoint_id', '=', endpointId).executeTakeFirstOrThrow()).n)

    /** meta.total of the endpoint's delivery list, as a client reads it. */
    const total = async (a: TestAccount, endpointId: string) => (await listAttempts(a, endpointId)).meta.total as number

    const changesOf = async (a: TestAccount) =>
      (await db().selectFrom('attempt_count_changes').select('n').where('account_id', '=', a.id).execute()).length
    const foldedOf = async (a: TestAccount) =>
      (await db().selectFrom('attempt_counts').select('n').where('account_id', '=', a.id).execute()).length

    /** Every endpoint's total equals its attempts counted; returns the counts, by endpoint id. */
    async function assertTotals(endpoints: Endpoints, when: string): Promise<Record<string, number>> {
      const expected: Record<string, number> = {}
      const totals: Record<string, number> = {}
      for (const [a, ep] of endpoints) {
        expected[ep.id] = await counted(ep.id)
        totals[ep.id] = await total(a, ep.id)
      }
      assert.deepEqual(totals, expected, when)
      return expected
    }

    /** Every total exact before a fold and after folding everything; the fold took every change of the accounts. */
    async function assertExact(endpoints: Endpoints): Promise<Record<string, number>> {
      const expected = await assertTotals(endpoints, 'before a fold')
      await foldAll()
      for (const [a] of endpoints) assert.equal(await changesOf(a), 0, 'the fold took every change of the account')
      assert.deepEqual(await assertTotals(endpoints, 'after a fold'), expected)
      return expected
    }

    test('real deliveries and retries: every endpoint\'s total exact before any fold, between folds and after all; empty endpoints 0', async () => {
      const a = await t.account()
      const b = await t.account()
      const rOk = await receiverIn(receivers)
      const rFail = await receiverIn(receivers, { respond: failingTwice() })
      const rB = await receiverIn(receivers)
      const all = await endpointFor(a, rOk)
      const failing = await endpointFor(a, rFail, ['wish.created'])
      // Subscribed to what never happens here: no attempt, ever.
      const quiet = await endpointFor(a, await receiverIn(receivers), ['payment.refunded'])
      const ofB = await endpointFor(b, rB)
      const wishes = []
      for (let i = 0; i < 5; i++) wishes.push(await createWish(a, { query: `wish ${i}` }))
      await updateWish(a, wishes[0].id, { query: 'a blue kettle' })
      await updateWish(a, wishes[1].id, { query: 'a red kettle' })
      await createMandate(t, a)
      await createWish(b, { query: 'b 1' })
      await createWish(b, { query: 'b 2' })
      const endpoints: Endpoints = [[a, all], [a, failing], [a, quiet], [b, ofB]]
      for (const [account, ep] of endpoints) assert.equal(await total(account, ep.id), 0, 'nothing delivered yet')

      // The first attempts: the failing endpoint's are retried later. Nothing is folded yet.
      await drain()
      assert.equal(rFail.deliveries.length, 5)
      assert.deepEqual(rFail.deliveries.map((d) => d.answered), [500, 500, 500, 500, 500])
      assert.deepEqual(await assertTotals(endpoints, 'before any fold'), { [all.id]: 8, [failing.id]: 5, [quiet.id]: 0, [ofB.id]: 2 })
      for (const account of [a, b]) {
        assert.equal(await foldedOf(account) > 0, !changesWait, changesWait ? 'no fold has run' : 'counted at once')
        assert.equal(await changesOf(account) > 0, changesWait, 'the totals came from the changes')
      }

      // One fold, then the first retries: part of each count folded, part not yet.
      await fold()
      await assertTotals(endpoints, 'after a fold')
      t.clock.advance(1000)
      await drain()
      assert.equal(rFail.deliveries.length, 10)
      assert.ok(await foldedOf(a) > 0 && (await changesOf(a) > 0) === changesWait, 'folded counts and changes both')
      assert.equal((await assertTotals(endpoints, 'retried, not folded'))[failing.id], 10)
      await fold()
      await assertTotals(endpoints, 'retried, folded')

      // A resend is one more attempt.
      const [latest] = (await listAttempts(a, all.id)).data
      assert.equal((await a.request('POST', `/webhook_deliveries/${latest.id}/resend`)).status, 202)
      await settle(endpoints)
      assert.deepEqual(rFail.deliveries.map((d) => d.answered).sort(), [...Array(10).fill(500), ...Array(5).fill(200)].sort())
      const expected = await assertExact(endpoints)
      assert.deepEqual(expected, { [all.id]: 9, [failing.id]: 15, [quiet.id]: 0, [ofB.id]: 2 })
      // The list holds as many as its total says.
      for (const [account, ep] of endpoints) assert.equal((await listAttempts(account, ep.id, '?limit=100')).data.length, expected[ep.id])

      // An endpoint made after all of it has 0, and so has one that was never delivered to; another
      // account's endpoint is not found, its count never read.
      const late = await endpointFor(a, await receiverIn(receivers))
      assert.equal(await total(a, late.id), 0)
      assert.equal(await total(a, quiet.id), 0)
      assert.equal((await a.request('GET', `/webhook_endpoints/${ofB.id}/deliveries`)).status, 404)
      assert.equal(await countAttemptsOfEndpoint(db(), a.id, ofB.id), 0, 'the counts are by account and endpoint')
    })

    test('retention takes the attempts it deletes off the counts, in several batches, folded or not; then the periodic task', async () => {
      const a = await t.account()
      const b = await t.account()
      const ok = await endpointFor(a, await receiverIn(receivers))
      const failing = await endpointFor(a, await receiverIn(receivers, { respond: failingTwice() }))
      const ofB = await endpointFor(b, await receiverIn(receivers))
      const endpoints: Endpoints = [[a, ok], [a, failing], [b, ofB]]
      const checkpoint = async (when: string) => assertTotals(endpoints, when)

      // Old attempts: part of their changes folded, the rest not yet.
      for (let i = 0; i < 4; i++) await createWish(a, { query: `old ${i}` })
      await createMandate(t, a)
      await createWish(b, { query: 'b old 1' })
      await createWish(b, { query: 'b old 2' })
      await settle(endpoints)
      await foldAll()
      for (let i = 0; i < 2; i++) await createWish(a, { query: `old, not folded ${i}` })
      await settle(endpoints)
      assert.deepEqual(await checkpoint('old attempts'), { [ok.id]: 7, [failing.id]: 21, [ofB.id]: 2 })
      assert.ok(await foldedOf(a) > 0 && (await changesOf(a) > 0) === changesWait, 'folded counts and changes both')

      // Past the retention period, newer attempts, kept.
      t.clock.advance((EVENT_RETENTION_DAYS + 1) * DAY_MS)
      for (let i = 0; i < 2; i++) await createWish(a, { query: `new ${i}` })
      await createWish(b, { query: 'b new' })
      await settle(endpoints)
      assert.deepEqual(await checkpoint('new attempts'), { [ok.id]: 9, [failing.id]: 27, [ofB.id]: 3 })

      // By hand, 3 at a time: every batch's deletions are counted when it commits.
      const before = new Date(t.clock.now().getTime() - EVENT_RETENTION_DAYS * DAY_MS).toISOString()
      let batches = 0
      for (;;) {
        const deleted = await deleteAttemptsOlderThan(t.store.db, before, 3)
        if (deleted > 0) batches++
        await checkpoint(`after batch ${batches}`)
        if (batches % 3 === 1) {
          await fold()
          await checkpoint(`after batch ${batches}, folded`)
        }
        if (deleted < 3) break
      }
      assert.ok(batches >= 10, `${batches} batches`)
      assert.deepEqual(await assertExact(endpoints), { [ok.id]: 2, [failing.id]: 6, [ofB.id]: 1 })

      // The periodic task, as the job runner runs it, once the kept attempts are old too.
      t.clock.advance((EVENT_RETENTION_DAYS + 1) * DAY_MS)
      await createWish(a, { query: 'newest' })
      await settle(endpoints)
      await eventRetention({ db: t.store.db, clock: t.clock }).run()
      assert.deepEqual(await assertExact(endpoints), { [ok.id]: 1, [failing.id]: 3, [ofB.id]: 0 })
    })

    test('deliveries recorded at once by several runners, with folds among them: every total exact; two folds at once', async () => {
      const a = await t.account()
      const b = await t.account()
      const all = await endpointFor(a, await receiverIn(receivers))
      const failing = await endpointFor(a, await receiverIn(receivers, { respond: failingTwice() }), ['wish.created'])
      const ofB = await endpointFor(b, await receiverIn(receivers))
      const endpoints: Endpoints = [[a, all], [a, failing], [b, ofB]]
      const toUpdate = await Promise.all(Array.from({ length: 4 }, (_, i) => createWish(a, { query: `to update ${i}` })))
      // Runners as several processes would run them; the app's own also runs the count fold every second.
      const runners = [runner, deliveryRunner(), deliveryRunner()]
      const passes = () => Promise.all([...runners.map((r) => drain(r)), t.jobs.runOnce()])

      // 30 writes at once, half with a key (the request's transaction), half without (PostgreSQL's
      // shared batch); runner passes and two folds at once each time a fifth write answers, so that
      // deliveries are recorded while the writes and the folds are in flight.
      const writes: Promise<unknown>[] = [
        ...Array.from({ length: 20 }, (_, i) => a.request('POST', '/wishes', { query: `burst ${i}` }, i % 2 === 0 ? { headers: { 'idempotency-key': randomUUID() } } : {})
          .then((r) => assert.equal(r.status, 201, r.raw))),
        ...toUpdate.map((w, i) => updateWish(a, w.id, { query: `updated ${i}` })),
        ...Array.from({ length: 6 }, (_, i) => createWish(b, { query: `b burst ${i}` })),
      ]
      const folds = [
        fold(), fold(),
        ...writes.filter((_, i) => i % 5 === 4).map((w) => w.then(() => Promise.all([passes(), fold(), fold()]))),
      ]
      await Promise.all([...writes, ...folds])
      // The retries, with passes and folds at once.
      await settle(endpoints, () => Promise.all([passes(), fold(), fold()]))
      let expected = await assertTotals(endpoints, 'settled with folds among the deliveries')
      assert.deepEqual(expected, { [all.id]: 28, [failing.id]: 72, [ofB.id]: 6 })

      // Many changes waiting (resends, delivered at once, no fold), then two folds at once: each change is folded once.
      const resent = (await listAttempts(a, all.id, '?limit=10')).data
      const resends = await Promise.all(resent.map((x: any) => a.request('POST', `/webhook_deliveries/${x.id}/resend`)))
      for (const res of resends) assert.equal(res.status, 202, res.raw)
      await settle(endpoints, () => Promise.all(runners.map((r) => drain(r))))
      assert.equal(await changesOf(a) > 0, changesWait, 'changes wait to be folded')
      await Promise.all([fold(), fold()])
      await Promise.all([foldAll(), foldAll(), foldAll()])
      for (const account of [a, b]) assert.equal(await changesOf(account), 0)
      expected = await assertTotals(endpoints, 'concurrent folds count each change once')
      assert.deepEqual(expected, { [all.id]: 38, [failing.id]: 72, [ofB.id]: 6 })
    })

    test('migration 0014 counts the attempts that existed before it, and goes down and up again', async () => {
      const store = await kind.open()
      try {
        const migrator = await createMigrator(store.db)
        assert.equal((await migrator.migrateTo('0013_event_counts')).error, undefined)
        const db = store.db.kysely
        const stamp = '2026-01-01T00:00:00.000Z'
        let n = 0
        /** An attempt as a version before 0014 wrote it: the row alone. */
        const insertAttempt = (accountId: string, endpointId: string) => sql`insert into webhook_attempts
          (id, account_id, endpoint_id, event_id, event_type, attempt, status_code, error, succeeded, duration_ms, next_retry_at, created_at)
          values (${`wha_old${n++}`}, ${accountId}, ${endpointId}, 'evt_x', 'wish.created', 1, 500, 'HTTP 500', 0, 3, null, ${stamp})`.execute(db)
        for (const id of ['acct_old', 'acct_other']) await sql`insert into accounts (id, name, created_at) values (${id}, ${id}, ${stamp})`.execute(db)
        for (let i = 0; i < 3; i++) await insertAttempt('acct_old', 'we_one')
        for (let i = 0; i < 2; i++) await insertAttempt('acct_old', 'we_two')
        await insertAttempt('acct_other', 'we_three')

        const countedRows = async (endpointId: string) => Number((await db.selectFrom('webhook_attempts')
          .select((eb) => eb.fn.countAll<number>().as('n')).where('endpoint_id', '=', endpointId).executeTakeFirstOrThrow()).n)
        const counts = async () => ({
          we_one: await countAttemptsOfEndpoint(db, 'acct_old', 'we_one'),
          we_two: await countAttemptsOfEndpoint(db, 'acct_old', 'we_two'),
          we_three: await countAttemptsOfEndpoint(db, 'acct_other', 'we_three'),
        })
        const rows = async () => ({ we_one: await countedRows('we_one'), we_two: await countedRows('we_two'), we_three: await countedRows('we_three') })
        let expected = { we_one: 3, we_two: 2, we_three: 1 }
        for (let round = 0; round < 2; round++) {
          assert.equal((await migrator.migrateToLatest()).error, undefined)
          assert.deepEqual(await rows(), expected, `round ${round}: the rows`)
          assert.deepEqual(await counts(), expected, `round ${round}`)
          assert.equal(await countAttemptsOfEndpoint(db, 'acct_old', 'we_three'), 0, 'another account\'s endpoint')
          // Counted into attempt_counts itself: no change waits, and a fold finds nothing to do.
          assert.equal((await db.selectFrom('attempt_count_changes').select('n').execute()).length, 0)
          assert.equal(await foldAttemptCounts(store.db), 0)
          assert.deepEqual(await counts(), expected, `round ${round}, folded`)
          if (round === 0) {
            assert.equal((await migrator.migrateTo('0013_event_counts')).error, undefined)
            // Recorded while the counters were gone: going up again counts it too.
            await insertAttempt('acct_old', 'we_one')
            expected = { ...expected, we_one: 4 }
          }
        }
      } finally {
        await store.close()
      }
    })
  })
}
