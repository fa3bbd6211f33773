/**
 * `npx tsx bench/pg-write-cost.ts [--seconds N] [--rounds N]`, with BENCH_DATABASE_URL or TEST_DATABASE_URL
 * set: PostgreSQL's CPU for the statement one `POST /payments` writes (writePlanStatement in
 * payments/repository.ts). HTTP, the load generator and the batch's timing are left out.
 *
 * How it measures: two loops each send 20 such statements at a time as one transaction, as
 * db/statement-batch.ts groups them. Each round runs N seconds. The CPU of PostgreSQL's processes (from
 * /proc, so PostgreSQL must run on this machine) is divided by the statements committed.
 *
 * On this machine the HTTP bench's req/s moves by ±15 % between runs of one build, more than a change to
 * the statement gains. This figure moves by a few percent. To compare two builds, run it in each checkout
 * in turn (docs/performance.md, sixteenth pass).
 */
import { randomUUID } from 'node:crypto'
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import { cpuSeconds } from './proc.js'
import { seedBasics } from './seed.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { writePlanStatement } from '../src/modules/payments/repository.js'
import type { PaymentPlan } from '../src/modules/payments/plan.js'
import { openStore } from '../test/helpers/stores.js'
import { requireBenchPostgresUrl } from './postgres-url.js'

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '6' }, rounds: { type: 'string', default: '3' } } })
const url = requireBenchPostgresUrl()
const STATEMENTS_A_TRANSACTION = 20
const LOOPS = 2

const store = await openStore('postgres', { postgresUrl: url, queryTimeoutMs: 0 })
try {
  await migrateToLatest(store.db)
  const seed = await seedBasics(store)
  const db = store.db.kysely
  // The rows of the seeded payment, written again under new ids: the statement a real payment sends.
  const payment = await db.selectFrom('payments').selectAll().where('id', '=', seed.paymentId).executeTakeFirstOrThrow()
  // Its events (created and succeeded, as a card payment's): a real payment's statement writes both.
  const events = await db.selectFrom('events').selectAll().where('object_id', '=', seed.paymentId).orderBy('id').execute()
  if (events.length !== 2) throw new Error(`the seeded payment has ${events.length} events, not created and succeeded`)
  const responseBody = JSON.stringify({ data: payment })
  const newId = (prefix: string) => `${prefix}_${randomUUID().replace(/-/g, '').slice(0, 26)}`

  const statement = () => {
    const now = new Date().toISOString()
    const id = newId('pay')
    const plan = {
      hold: { accountId: seed.accountId, mandateId: seed.mandateId, amount: 1, currency: payment.currency, now },
      payment: { ...payment, id, created_at: now, updated_at: now },
      events: events.map((event) => ({ ...event, id: newId('evt'), object_id: id, created_at: now })),
      jobs: [],
    } as unknown as PaymentPlan
    const record = {
      account_id: seed.accountId, idempotency_key: randomUUID(), fingerprint: 'f'.repeat(64),
      response_status: 201, response_body: responseBody, created_at: now, expires_at: now,
    }
    return writePlanStatement(db, plan, record)
  }

  // Every PostgreSQL process: the backends of this pool and the background ones (WAL writer, checkpointer).
  const postgresPids = async () => (await sql<{ pid: number }>`select pid from pg_stat_activity`.execute(db)).rows.map((r) => r.pid)

  const round = async (seconds: number) => {
    const pids = await postgresPids()
    const before = cpuSeconds(pids)
    const until = Date.now() + seconds * 1000
    let written = 0
    await Promise.all(Array.from({ length: LOOPS }, async () => {
      while (Date.now() < until) {
        const results = await store.db.postgres!.runTogether(Array.from({ length: STATEMENTS_A_TRANSACTION }, statement))
        if (results.some((r) => Number((r.rows[0] as { saved: unknown }).saved) !== 1)) throw new Error('a statement did not save its payment')
        written += STATEMENTS_A_TRANSACTION
      }
    }))
    const cpu = cpuSeconds(pids) - before
    if (cpu === 0) throw new Error('PostgreSQL used no CPU that /proc shows: is it on this machine?')
    return { perSecond: Math.round(written / seconds), postgresCpuUs: Math.round((cpu * 1e6) / written) }
  }

  await round(2)
  for (let i = 1; i <= Number(values.rounds); i++) {
    const { perSecond, postgresCpuUs } = await round(Number(values.seconds))
    process.stdout.write(`round ${i}: ${perSecond} statements/s, PostgreSQL CPU ${postgresCpuUs} µs a statement\n`)
  }
} finally {
  await store.close()
}
