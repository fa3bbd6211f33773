import SQLite from 'better-sqlite3'
import { sql } from 'kysely'
import { loadConfig } from '../src/config.js'
import { systemClock } from '../src/lib/clock.js'
import { createServices } from '../src/services.js'
import type { TestStore } from '../test/helpers/stores.js'

/** The account whose payments and events the `pages` scenario lists, and the ids at a depth of its lists. */
export interface PagesSeed {
  key: string
  accountId: string
  count: number
  /** The id of the payment at 0-based position `depth` of GET /payments (newest first). */
  idAt(depth: number): string
  /** The id of the event at 0-based position `depth` of GET /events (newest first). */
  eventIdAt(depth: number): string
  /** The account's webhook endpoint, with one delivery attempt of each event. */
  endpointId: string
  /** The id of the attempt at 0-based position `depth` of the endpoint's delivery list (newest first). */
  attemptIdAt(depth: number): string
}

/** Rows per transaction (SQLite) or statement (PostgreSQL). */
const BATCH = 100_000

const paymentId = (i: number) => `pay_bench${String(i).padStart(21, '0')}`
const eventId = (i: number) => `evt_bench${String(i).padStart(21, '0')}`
const attemptId = (i: number) => `wha_bench${String(i).padStart(21, '0')}`

/**
 * A new account with `count` payments, for the `pages` scenario: the list a user pages most. The
 * account and its mandate are made through the services; the payments in bulk, straight through SQL
 * (multi-row statements in big transactions, not the API), one millisecond apart, 95 % succeeded and
 * the rest failed, all on that one mandate, each with its event (`payment.succeeded` or
 * `payment.failed`, at the payment's time), and each event with one delivery attempt to the account's one
 * webhook endpoint (a row, not a receiver: no delivery job is written, so nothing is sent). Then the
 * statistics, as after seedWishes.
 */
export async function seedPayments(store: TestStore, count: number): Promise<PagesSeed> {
  const services = createServices({ config: loadConfig({}), db: store.db, clock: systemClock })
  const created = await services.accounts.createKey(`bench-pages-${Date.now()}`, 'write')
  const ctx = { accountId: created.account_id, requestId: null }
  const mandate = await services.mandates.create(ctx, {
    protocol: 'ap2', max_amount: 1_000_000, budget_amount: 1e12, usage: 'multi_use', currency: 'USD',
    expires_at: new Date(Date.now() + 30 * 86_400_000).toISOString(),
  })
  const accountId = created.account_id
  const endpointId = `we_bench${String(Date.now()).padStart(21, '0')}`
  const start = Date.now() - count - 60_000
  const at0 = new Date(start).toISOString()
  await store.db.kysely.insertInto('webhook_endpoints').values({
    id: endpointId, account_id: accountId, url: 'http://127.0.0.1:9/bench', events: '["*"]', description: 'bench: delivery list',
    secret: 'whsec_YmVuY2g=', status: 'enabled', disabled_reason: null, created_at: at0, updated_at: at0,
  }).execute()
  const began = performance.now()
  const shown = (done: number) => process.stderr.write(`[${store.name}] seeding payments ${done}/${count} (${((performance.now() - began) / 1000).toFixed(1)} s)\n`)

  if (store.name === 'sqlite') {
    const connection = new SQLite(store.sqlitePath)
    connection.pragma('journal_mode = WAL')
    // 50 rows a statement: 750 parameters, well under SQLite's 32,766.
    const ROWS = 50
    const values = '(?, ?, ?, null, ?, \'USD\', ?, \'ap2\', ?, 0, ?, ?, \'{}\', ?, ?, null)'
    const columns = 'id, account_id, mandate_id, wish_id, amount, currency, status, protocol_type, payment_method, amount_refunded, failure_code, failure_message, metadata, created_at, updated_at, ap2'
    const many = connection.prepare(`insert into payments (${columns}) values ${Array.from({ length: ROWS }, () => values).join(', ')}`)
    const one = connection.prepare(`insert into payments (${columns}) values ${values}`)
    const eventValues = '(?, ?, ?, ?, ?, null, ?)'
    const eventColumns = 'id, account_id, type, object_id, data, request_id, created_at'
    const manyEvents = connection.prepare(`insert into events (${eventColumns}) values ${Array.from({ length: ROWS }, () => eventValues).join(', ')}`)
    const oneEvent = connection.prepare(`insert into events (${eventColumns}) values ${eventValues}`)
    const attemptValues = '(?, ?, ?, ?, ?, 1, 200, null, 1, 3, null, ?)'
    const attemptColumns = 'id, account_id, endpoint_id, event_id, event_type, attempt, status_code, error, succeeded, duration_ms, next_retry_at, created_at'
    const manyAttempts = connection.prepare(`insert into webhook_attempts (${attemptColumns}) values ${Array.from({ length: ROWS }, () => attemptValues).join(', ')}`)
    const oneAttempt = connection.prepare(`insert into webhook_attempts (${attemptColumns}) values ${attemptValues}`)
    const attemptParamsOf = (i: number) =>
      [attemptId(i), accountId, endpointId, eventId(i), i % 20 === 0 ? 'payment.failed' : 'payment.succeeded', new Date(start + i).toISOString()]
    const eventParamsOf = (i: number) => {
      const failed = i % 20 === 0
      return [eventId(i), accountId, failed ? 'payment.failed' : 'payment.succeeded', paymentId(i),
        JSON.stringify({ object: { id: paymentId(i), object: 'payment', amount: 1000 + (i % 9000), currency: 'USD', status: failed ? 'failed' : 'succeeded' } }),
        new Date(start + i).toISOString()]
    }
    const paramsOf = (i: number) => {
      const at = new Date(start + i).toISOString()
      const failed = i % 20 === 0
      return [paymentId(i), accountId, mandate.id, 1000 + (i % 9000), failed ? 'failed' : 'succeeded', failed ? 'test_card_declined' : 'card',
        failed ? 'card_declined' : null, failed ? 'The card was declined' : null, at, at]
    }
    const batch = connection.transaction((from: number, to: number) => {
      let i = from
      for (; i + ROWS <= to; i += ROWS) {
        many.run(Array.from({ length: ROWS }, (_, k) => paramsOf(i + k)).flat())
        manyEvents.run(Array.from({ length: ROWS }, (_, k) => eventParamsOf(i + k)).flat())
        manyAttempts.run(Array.from({ length: ROWS }, (_, k) => attemptParamsOf(i + k)).flat())
      }
      for (; i < to; i++) {
        one.run(paramsOf(i))
        oneEvent.run(eventParamsOf(i))
        oneAttempt.run(attemptParamsOf(i))
      }
    })
    for (let from = 0; from < count; from += BATCH) {
      batch(from, Math.min(count, from + BATCH))
      shown(Math.min(count, from + BATCH))
    }
    connection.pragma('wal_checkpoint(TRUNCATE)')
    connection.close()
    await sql`analyze`.execute(store.db.kysely)
  } else {
    for (let from = 0; from < count; from += BATCH) {
      const to = Math.min(count, from + BATCH)
      await sql`insert into payments (id, account_id, mandate_id, wish_id, amount, currency, status, protocol_type, payment_method, amount_refunded,
          failure_code, failure_message, metadata, created_at, updated_at, ap2)
        select 'pay_bench' || lpad(i::text, 21, '0'), ${accountId}, ${mandate.id}, null, 1000 + i % 9000, 'USD',
          case when i % 20 = 0 then 'failed' else 'succeeded' end, 'ap2',
          case when i % 20 = 0 then 'test_card_declined' else 'card' end, 0,
          case when i % 20 = 0 then 'card_declined' end, case when i % 20 = 0 then 'The card was declined' end, '{}',
          to_char((to_timestamp(${start / 1000}::double precision) + i * interval '1 millisecond') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          to_char((to_timestamp(${start / 1000}::double precision) + i * interval '1 millisecond') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          null
        from generate_series(${from}::int, ${to - 1}::int) as i`.execute(store.db.kysely)
      await sql`insert into events (id, account_id, type, object_id, data, request_id, created_at)
        select 'evt_bench' || lpad(i::text, 21, '0'), ${accountId}, case when i % 20 = 0 then 'payment.failed' else 'payment.succeeded' end,
          'pay_bench' || lpad(i::text, 21, '0'),
          json_build_object('object', json_build_object('id', 'pay_bench' || lpad(i::text, 21, '0'), 'object', 'payment', 'amount', 1000 + i % 9000,
            'currency', 'USD', 'status', case when i % 20 = 0 then 'failed' else 'succeeded' end))::text,
          null,
          to_char((to_timestamp(${start / 1000}::double precision) + i * interval '1 millisecond') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
        from generate_series(${from}::int, ${to - 1}::int) as i`.execute(store.db.kysely)
      await sql`insert into webhook_attempts (id, account_id, endpoint_id, event_id, event_type, attempt, status_code, error, succeeded,
          duration_ms, next_retry_at, created_at)
        select 'wha_bench' || lpad(i::text, 21, '0'), ${accountId}, ${endpointId}, 'evt_bench' || lpad(i::text, 21, '0'),
          case when i % 20 = 0 then 'payment.failed' else 'payment.succeeded' end, 1, 200, null, 1, 3, null,
          to_char((to_timestamp(${start / 1000}::double precision) + i * interval '1 millisecond') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
        from generate_series(${from}::int, ${to - 1}::int) as i`.execute(store.db.kysely)
      shown(to)
    }
    // As after seedWishes: statistics and the visibility map for index-only counts, then the seed
    // written out before any scenario runs.
    await sql`vacuum analyze payments`.execute(store.db.kysely)
    await sql`vacuum analyze events`.execute(store.db.kysely)
    await sql`vacuum analyze webhook_attempts`.execute(store.db.kysely)
    await sql`checkpoint`.execute(store.db.kysely).catch((error: unknown) => {
      process.stderr.write(`[postgres] no checkpoint after seeding (${String(error)}); figures may suffer\n`)
    })
  }
  // What the service records with every payment it writes (migration 0012), as one change a status.
  await store.db.kysely.insertInto('payment_count_changes').columns(['account_id', 'status', 'n'])
    .expression((eb) => eb.selectFrom('payments').select((s) => ['account_id', 'status', s.fn.countAll<number>().as('n')])
      .where('account_id', '=', accountId).where('id', 'like', 'pay_bench%').groupBy(['account_id', 'status']))
    .execute()
  // And with every event it writes (migration 0013), one change a type.
  await store.db.kysely.insertInto('event_count_changes').columns(['account_id', 'type', 'n'])
    .expression((eb) => eb.selectFrom('events').select((s) => ['account_id', 'type', s.fn.countAll<number>().as('n')])
      .where('account_id', '=', accountId).where('id', 'like', 'evt_bench%').groupBy(['account_id', 'type']))
    .execute()
  // And with every delivery attempt it records (migration 0014), one change an endpoint.
  await store.db.kysely.insertInto('attempt_count_changes').values({ account_id: accountId, endpoint_id: endpointId, n: count }).execute()
  return {
    key: created.key, accountId, count, endpointId,
    idAt: (depth) => paymentId(count - 1 - depth),
    eventIdAt: (depth) => eventId(count - 1 - depth),
    attemptIdAt: (depth) => attemptId(count - 1 - depth),
  }
}
