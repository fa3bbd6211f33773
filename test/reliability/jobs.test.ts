import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createBackgroundWork } from '../../src/jobs/index.js'
import { claimDue, enqueue, release } from '../../src/modules/queue/repository.js'
import { createJobRunner, type JobContext } from '../../src/jobs/runner.js'
import type { SettlePayload } from '../../src/modules/payments/service.js'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { createMandate, eventTypesOf } from '../helpers/fixtures.js'
import { inAnHour } from '../helpers/processes.js'
import { type StoreKind, storeKinds } from '../helpers/stores.js'

/**
 * The durable job runner (src/jobs): one claim per due job however many runners poll at once, failed
 * jobs retried with their error kept, leases that run out, and jobs handed back on stop.
 */

const silent = { info() {}, warn() {}, error() {} }

async function withApp(kind: StoreKind, work: (t: TestApp) => Promise<void>): Promise<void> {
  const t = await startTestApp(kind)
  try {
    await work(t)
  } finally {
    await t.close()
  }
}

async function bankTransfer(account: TestAccount, mandateId: string, n: number): Promise<string> {
  const res = await account.request('POST', '/payments', {
    mandate_id: mandateId, amount: 100, payment_method: 'bank_transfer', idempotency_key: `bt-${n}`,
  })
  assert.equal(res.status, 201, res.raw)
  assert.equal(res.body.data.status, 'pending')
  return res.body.data.id as string
}

const jobRow = (t: TestApp, id: string) => t.store.db.kysely.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst()

for (const kind of storeKinds()) {
  describe(`job runner on ${kind.name}`, () => {
    test('due settlement jobs run once when two runners claim at the same moment', async () => {
      await withApp(kind, async (t) => {
        const account = await t.account()
        const mandate = await createMandate(t, account, { max_amount: 100, budget_amount: 100_000, usage: 'multi_use', expires_at: inAnHour() })
        const ids: string[] = []
        for (let n = 0; n < 20; n++) ids.push(await bankTransfer(account, mandate.id, n))

        // Count every settlement step each runner is handed, per payment.
        const steps = new Map<string, number>()
        const counting = {
          settleStep: (payload: SettlePayload, commit: JobContext['commit']) => {
            steps.set(payload.payment_id, (steps.get(payload.payment_id) ?? 0) + 1)
            return t.services.payments.settleStep(payload, commit)
          },
        }
        const a = createBackgroundWork({ db: t.store.db, clock: t.clock, config: t.config, logger: silent, payments: counting })
        const b = createBackgroundWork({ db: t.store.db, clock: t.clock, config: t.config, logger: silent, payments: counting })
        const bothAtOnce = () => Promise.all([a.runOnce(), b.runOnce(), a.runOnce(), b.runOnce(), a.runOnce(), b.runOnce()])
        await bothAtOnce()

        for (const id of ids) {
          assert.equal(steps.get(id), 1, `settlement step of ${id} ran ${steps.get(id) ?? 0} times`)
          assert.deepEqual(await eventTypesOf(t.store.db, id), ['payment.created', 'payment.processing'])
          const payment = await account.request('GET', `/payments/${id}`)
          assert.equal(payment.body.data.status, 'processing')
        }
        // The next step waits for the settlement time; each job is there once, unleased.
        const jobs = await t.store.db.kysely.selectFrom('jobs').selectAll().where('type', '=', 'payment.settle').execute()
        assert.equal(jobs.length, ids.length)
        for (const job of jobs) {
          assert.equal(job.locked_until, null)
          assert.equal(job.run_at, (JSON.parse(job.payload) as SettlePayload).settle_at)
        }

        // Past the settlement delay (default 2000 ms), both runners again: each payment succeeds once.
        t.clock.advance(2_001)
        steps.clear()
        await bothAtOnce()
        for (const id of ids) {
          assert.equal(steps.get(id), 1, `final settlement step of ${id} ran ${steps.get(id) ?? 0} times`)
          assert.deepEqual(await eventTypesOf(t.store.db, id), ['payment.created', 'payment.processing', 'payment.succeeded'])
        }
        const left = await t.store.db.kysely.selectFrom('jobs').select('id').where('type', '=', 'payment.settle').execute()
        assert.deepEqual(left, [])
      })
    })

    test('claims made at the same moment never share a job', async () => {
      await withApp(kind, async (t) => {
        const db = t.store.db
        const now = t.clock.now()
        const ids: string[] = []
        for (let n = 0; n < 60; n++) ids.push(await enqueue(db.kysely, { type: 'test.race', payload: { n }, runAt: now }, now))
        const nowIso = now.toISOString()
        const lease = new Date(now.getTime() + 30_000).toISOString()
        for (let round = 0; round < 3; round++) {
          await release(db.kysely, ids)
          const batches = await Promise.all(Array.from({ length: 12 }, () => claimDue(db.kysely, nowIso, lease, 10)))
          const claimed = batches.flat().map((j) => j.id)
          assert.equal(new Set(claimed).size, claimed.length, `round ${round}: a job was claimed twice`)
          assert.deepEqual([...claimed].sort(), [...ids].sort(), `round ${round}: every due job claimed once`)
        }
        const rows = await db.kysely.selectFrom('jobs').select(['attempts']).execute()
        assert.deepEqual(rows.map((r) => r.attempts), ids.map(() => 3))
      })
    })

    test('a job whose handler throws is rescheduled with last_error and attempts, and runs again later', async () => {
      await withApp(kind, async (t) => {
        const seen: number[] = []
        const runner = createJobRunner({
          db: t.store.db,
          clock: t.clock,
          logger: silent,
          handlers: {
            'test.flaky': async (job) => {
              seen.push(job.attempts)
              assert.deepEqual(job.payload, { n: 7 })
              if (seen.length < 3) throw new Error(`boom ${seen.length}`)
              return undefined
            },
          },
        })
        const now = t.clock.now()
        const id = await enqueue(t.store.db.kysely, { type: 'test.flaky', payload: { n: 7 }, runAt: now }, now)

        const firstFailedAt = t.clock.now().getTime()
        await runner.runOnce()
        assert.deepEqual(seen, [1])
        let row = await jobRow(t, id)
        assert.ok(row, 'the failed job is still queued')
        assert.equal(row.attempts, 1)
        assert.equal(row.last_error, 'Error: boom 1')
        assert.equal(row.locked_until, null)
        const firstRetry = Date.parse(row.run_at)
        assert.ok(firstRetry > t.clock.now().getTime(), `retry at ${row.run_at} is in the future`)

        // Not before its retry time.
        await runner.runOnce()
        assert.deepEqual(seen, [1])

        t.clock.advance(firstRetry - t.clock.now().getTime() + 1)
        const secondFailedAt = t.clock.now().getTime()
        await runner.runOnce()
        assert.deepEqual(seen, [1, 2])
        row = await jobRow(t, id)
        assert.ok(row, 'the job failed again and is still queued')
        assert.equal(row.attempts, 2)
        assert.equal(row.last_error, 'Error: boom 2')
        assert.equal(row.locked_until, null)
        const secondRetry = Date.parse(row.run_at)
        assert.ok(secondRetry > t.clock.now().getTime())
        // Backing off: the second wait is longer than the first.
        assert.ok(secondRetry - secondFailedAt > firstRetry - firstFailedAt, `the retry delay grows (${firstRetry - firstFailedAt} ms, then ${secondRetry - secondFailedAt} ms)`)

        t.clock.advance(secondRetry - t.clock.now().getTime() + 1)
        await runner.runOnce()
        assert.deepEqual(seen, [1, 2, 3])
        assert.equal(await jobRow(t, id), undefined, 'a job that succeeded is gone')
        await runner.runOnce()
        assert.deepEqual(seen, [1, 2, 3])
      })
    })

    test('a claimed job stays claimed while its lease holds and is claimable again once it has run out', async () => {
      await withApp(kind, async (t) => {
        const db = t.store.db
        const base = t.clock.now()
        const at = (ms: number) => new Date(base.getTime() + ms).toISOString()
        const id = await enqueue(db.kysely, { type: 'test.lease', payload: {}, runAt: base }, base)

        const first = await claimDue(db.kysely, at(0), at(30_000), 10)
        assert.deepEqual(first.map((j) => [j.id, j.attempts, j.locked_until]), [[id, 1, at(30_000)]])
        assert.deepEqual(await claimDue(db.kysely, at(0), at(30_000), 10), [], 'leased: not claimable')
        assert.deepEqual(await claimDue(db.kysely, at(29_999), at(59_999), 10), [], 'still leased 1 ms before the end')

        const second = await claimDue(db.kysely, at(30_001), at(60_001), 10)
        assert.deepEqual(second.map((j) => [j.id, j.attempts, j.locked_until]), [[id, 2, at(60_001)]])
        assert.deepEqual(await claimDue(db.kysely, at(30_001), at(60_001), 10), [])
      })
    })

    test('a runner does not run a job another (dead) process holds, and runs it once the lease ran out', async () => {
      await withApp(kind, async (t) => {
        const db = t.store.db
        let runs = 0
        const runner = createJobRunner({
          db, clock: t.clock, logger: silent, leaseMs: 5_000,
          handlers: { 'test.orphan': async () => { runs++; return undefined } },
        })
        const now = t.clock.now()
        const id = await enqueue(db.kysely, { type: 'test.orphan', payload: {}, runAt: now }, now)
        // A process claims it with a 30 s lease and dies.
        const dead = await claimDue(db.kysely, now.toISOString(), new Date(now.getTime() + 30_000).toISOString(), 10)
        assert.equal(dead.length, 1)

        await runner.runOnce()
        assert.equal(runs, 0)
        t.clock.advance(20_000)
        await runner.runOnce()
        assert.equal(runs, 0)
        t.clock.advance(10_100)
        await runner.runOnce()
        assert.equal(runs, 1)
        assert.equal(await jobRow(t, id), undefined)
      })
    })

    test('release() hands leased jobs back at once; only those named', async () => {
      await withApp(kind, async (t) => {
        const db = t.store.db
        const now = t.clock.now().toISOString()
        const lease = new Date(Date.parse(now) + 30_000).toISOString()
        const ids: string[] = []
        for (let n = 0; n < 3; n++) {
          const runAt = new Date(Date.parse(now) - 3 + n)
          ids.push(await enqueue(db.kysely, { type: 'test.release', payload: { n }, runAt }, runAt))
        }
        const claimed = await claimDue(db.kysely, now, lease, 10)
        assert.deepEqual(claimed.map((j) => j.id).sort(), [...ids].sort())

        await release(db.kysely, [])
        assert.deepEqual(await claimDue(db.kysely, now, lease, 10), [], 'release([]) changes nothing')

        await release(db.kysely, [ids[0]!, ids[2]!])
        const rows = await db.kysely.selectFrom('jobs').selectAll().orderBy('id').execute()
        const byId = new Map(rows.map((r) => [r.id, r]))
        assert.equal(byId.get(ids[0]!)?.locked_until, null)
        assert.equal(byId.get(ids[1]!)?.locked_until, lease)
        assert.equal(byId.get(ids[2]!)?.locked_until, null)
        // Released jobs keep their attempts and schedule.
        assert.equal(byId.get(ids[0]!)?.attempts, 1)

        const again = await claimDue(db.kysely, now, lease, 10)
        assert.deepEqual(again.map((j) => j.id).sort(), [ids[0]!, ids[2]!].sort())
        assert.deepEqual(again.map((j) => j.attempts), [2, 2])
      })
    })

    test('stop() while a batch is in hand: the job running finishes, the rest are handed back unleased', async () => {
      await withApp(kind, async (t) => {
        const db = t.store.db
        const ran: string[] = []
        let stopped: Promise<void> | undefined
        const runner = createJobRunner({
          db, clock: t.clock, logger: silent, batchSize: 10,
          handlers: {
            'test.stop': async (job) => {
              ran.push(job.id)
              stopped = runner.stop()
              return undefined
            },
          },
        })
        const now = t.clock.now()
        const ids: string[] = []
        for (let n = 0; n < 3; n++) ids.push(await enqueue(db.kysely, { type: 'test.stop', payload: { n }, runAt: now }, now))

        await runner.runOnce()
        await stopped
        assert.equal(ran.length, 1)
        const rows = await db.kysely.selectFrom('jobs').selectAll().execute()
        assert.deepEqual(rows.map((r) => r.id).sort(), ids.filter((id) => id !== ran[0]).sort())
        for (const row of rows) {
          assert.equal(row.locked_until, null, `job ${row.id} was handed back`)
          assert.equal(row.attempts, 1)
        }
        // Another runner takes them at once, without waiting for a lease.
        const next = await claimDue(db.kysely, t.clock.now().toISOString(), new Date(t.clock.now().getTime() + 30_000).toISOString(), 10)
        assert.equal(next.length, 2)
      })
    })
  })
}
