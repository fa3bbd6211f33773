import SQLite from 'better-sqlite3'
import { sql } from 'kysely'
import { loadConfig } from '../src/config.js'
import { systemClock } from '../src/lib/clock.js'
import { createServices } from '../src/services.js'
import type { TestStore } from '../test/helpers/stores.js'
import { progress } from './progress.js'

export interface Seed {
  key: string
  accountId: string
  mandateId: string
  paymentId: string
}

/**
 * A mandate no run can exhaust: 1e12 of budget at 1 a payment (a run makes tens of thousands; the
 * pgbench floor checks what is left), multi-use, 30 days.
 */
const unboundedMandate = () => ({
  protocol: 'ap2', max_amount: 1_000_000, budget_amount: 1e12, usage: 'multi_use', currency: 'USD',
  expires_at: new Date(Date.now() + 30 * 86_400_000).toISOString(),
}) as const

/** An account with a write key, a mandate no run can exhaust, and one payment to read. */
export async function seedBasics(store: TestStore): Promise<Seed> {
  const services = createServices({ config: loadConfig({}), db: store.db, clock: systemClock })
  const created = await services.accounts.createKey(`bench-${Date.now()}`, 'write')
  const ctx = { accountId: created.account_id, requestId: null }
  const mandate = await services.mandates.create(ctx, unboundedMandate())
  const payment = await services.payments.create(ctx, { mandate_id: mandate.id, amount: 100, currency: 'USD', payment_method: 'card' })
  return { key: created.key, accountId: created.account_id, mandateId: mandate.id, paymentId: payment.id }
}

/**
 * `count` more mandates of the account, each as unbounded as seedBasics' one: the `scale` scenario
 * spreads payments over them, so that no one mandate's row lock serialises them.
 */
export async function seedMandates(store: TestStore, accountId: string, count: number): Promise<string[]> {
  const services = createServices({ config: loadConfig({}), db: store.db, clock: systemClock })
  const ctx = { accountId, requestId: null }
  const ids: string[] = []
  for (let i = 0; i < count; i++) {
    ids.push((await services.mandates.create(ctx, unboundedMandate())).id)
  }
  return ids
}

/** Rows per transaction (SQLite) or statement (PostgreSQL): progress is shown between them. */
const SEED_BATCH = 50_000

/**
 * `count` wishes in bulk, straight through SQL: 95 % active (so offset 900000 of status=active still
 * has rows at 1M), the rest pending, fulfilled or cancelled; one millisecond apart.
 */
export async function seedWishes(store: TestStore, accountId: string, count: number): Promise<void> {
  const start = Date.now() - count - 60_000
  const shown = progress(`[${store.name}] seeding wishes`, count)
  if (store.name === 'sqlite') {
    const connection = new SQLite(store.sqlitePath)
    connection.pragma('journal_mode = WAL')
    const insert = connection.prepare(`insert into wishes (id, account_id, status, query, budget_max, budget_currency, protocol, category, metadata, expires_at, created_at, updated_at)
      values (?, ?, ?, ?, null, null, 'ap2', null, '{}', null, ?, ?)`)
    const statuses = ['pending', 'fulfilled', 'cancelled']
    const batch = connection.transaction((from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const at = new Date(start + i).toISOString()
        const status = i % 20 === 0 ? statuses[(i / 20) % 3]! : 'active'
        insert.run(`wish_bench${String(i).padStart(21, '0')}`, accountId, status, `bench wish ${i}`, at, at)
      }
    })
    for (let from = 0; from < count; from += SEED_BATCH) {
      batch(from, Math.min(count, from + SEED_BATCH))
      shown.update(Math.min(count, from + SEED_BATCH))
    }
    connection.pragma('wal_checkpoint(TRUNCATE)')
    connection.close()
  } else {
    for (let from = 0; from < count; from += SEED_BATCH) {
      const to = Math.min(count, from + SEED_BATCH)
      await sql`insert into wishes (id, account_id, status, query, budget_max, budget_currency, protocol, category, metadata, expires_at, created_at, updated_at)
        select 'wish_bench' || lpad(i::text, 21, '0'), ${accountId},
          case when i % 20 = 0 then (array['pending','fulfilled','cancelled'])[((i / 20) % 3) + 1] else 'active' end,
          'bench wish ' || i, null, null, 'ap2', null, '{}', null,
          to_char((to_timestamp(${start / 1000}::double precision) + i * interval '1 millisecond') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          to_char((to_timestamp(${start / 1000}::double precision) + i * interval '1 millisecond') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
        from generate_series(${from}::int, ${to - 1}::int) as i`.execute(store.db.kysely)
      shown.update(to)
    }
  }
  // The counters the service keeps with every wish write (migration 0005).
  await store.db.kysely.insertInto('wish_counts').columns(['account_id', 'status', 'slot', 'n'])
    .expression((eb) => eb.selectFrom('wishes').select((s) => ['account_id', 'status', sql<number>`0`.as('slot'), s.fn.countAll<number>().as('n')])
      .where('account_id', '=', accountId).groupBy(['account_id', 'status']))
    .execute()
  if (store.name === 'sqlite') {
    await sql`analyze`.execute(store.db.kysely)
    return
  }
  // The wishes table only: analyzing payments while it holds one row made the planner read a payment
  // by scanning the account's payments index, once the scenarios had written thousands (GET
  // /payments/:id at a quarter of its speed) until autovacuum analyzed it again. VACUUM sets the
  // visibility map, so the list's index-only scans do not visit the rows.
  await sql`vacuum analyze wishes`.execute(store.db.kysely)
  // Write the seed out now: otherwise the next checkpoint flushes a million rows while a scenario runs
  // (it halved every figure of one run, the floors' too). Needs a superuser or pg_checkpoint.
  await sql`checkpoint`.execute(store.db.kysely).catch((error: unknown) => {
    process.stderr.write(`[postgres] no checkpoint after seeding (${String(error)}); figures may suffer\n`)
  })
}
