import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import { textArrayLiteral } from '../../src/db/batched-lookup.js'
import { type Database, type Executor, openDatabase } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { loadConfig } from '../../src/config.js'
import { systemClock } from '../../src/lib/clock.js'
import * as idempotency from '../../src/modules/idempotency/repository.js'
import * as payments from '../../src/modules/payments/repository.js'
import * as webhooks from '../../src/modules/webhooks/repository.js'
import { createServices } from '../../src/services.js'
import { preparedPlan } from '../helpers/plans.js'
import { openStore, type PostgresTestStore } from '../helpers/stores.js'

/**
 * Batched lookups (src/db/batched-lookup.ts): on PostgreSQL the lookups through the database itself
 * submitted in one turn go as one query, and each caller gets what its own query would have found. The
 * lookups of this codebase are checked here against their one-key form, which runs in a transaction (and
 * on SQLite): the payment by account, the live idempotency record, a payment's mandate and endpoints.
 */

const pgUrl = process.env.TEST_DATABASE_URL

describe('batched lookups (postgres)', { skip: !pgUrl && 'PostgreSQL only (TEST_DATABASE_URL not set)' }, () => {
  let store: PostgresTestStore
  /** One connection: what it prepared, and how often each ran, is visible to the test. */
  let one: Database
  const seeded = { accounts: [] as string[], payments: [] as string[], mandates: [] as string[] }

  before(async () => {
    store = await openStore('postgres')
    await migrateToLatest(store.db)
    one = openDatabase({ databaseUrl: pgUrl!, postgresSchema: store.postgres.schema, poolSize: 1 })
    const services = createServices({ config: loadConfig({}), db: store.db, clock: systemClock })
    for (const name of ['first', 'second']) {
      const { account_id: accountId } = await services.accounts.createKey(`batched-${name}`, 'write')
      const ctx = { accountId, requestId: null }
      const mandate = await services.mandates.create(ctx, {
        protocol: 'ap2', max_amount: 1000, budget_amount: 10_000, usage: 'multi_use', currency: 'USD',
        expires_at: new Date(Date.now() + 86_400_000).toISOString(),
      })
      const payment = await services.payments.create(ctx, { mandate_id: mandate.id, amount: 100, currency: 'USD', payment_method: 'card' })
      seeded.accounts.push(accountId)
      seeded.mandates.push(mandate.id)
      seeded.payments.push(payment.id)
      for (const [key, expires] of [['live', '2999-01-01T00:00:00.000Z'], ['expired', '2000-01-01T00:00:00.000Z']] as const) {
        await idempotency.save(store.db.kysely, {
          account_id: accountId, idempotency_key: `${key}-${name}`, fingerprint: 'f', response_status: 201,
          response_body: `{"key":"${key}-${name}"}`, created_at: '2000-01-01T00:00:00.000Z', expires_at: expires,
        }, '2000-01-01T00:00:00.000Z')
      }
    }
  })
  after(async () => {
    await one.close()
    await store.close()
  })

  /** Each case looked up in turn inside one transaction, where a lookup takes its one-key form. */
  const aloneInTransaction = <C, R>(cases: readonly C[], lookup: (trx: Executor, c: C) => Promise<R>) =>
    store.db.kysely.transaction().execute(async (trx) => {
      const rows: R[] = []
      for (const c of cases) rows.push(await lookup(trx, c))
      return rows
    })

  /** Every pair of (account, id) from the seeded ones, plus one that does not exist. */
  const pairs = (ids: string[]) => seeded.accounts.flatMap((account) => [...ids, 'missing'].map((id) => [account, id] as const))
  const now = '2026-11-24T00:00:00.000Z'
  const keys = () => seeded.accounts.flatMap((account) => ['live-first', 'live-second', 'expired-first', 'expired-second', 'missing'].map((key) => [account, key] as const))

  test('the payments lookup, batched, finds what each key finds alone', async () => {
    const db = store.db.kysely
    const batched = await Promise.all(pairs(seeded.payments).map(([account, id]) => payments.findPayment(db, account, id)))
    const alone = await aloneInTransaction(pairs(seeded.payments), (trx, [account, id]) => payments.findPayment(trx, account, id))
    assert.deepEqual(batched, alone)
    assert.deepEqual(batched.map((p) => p?.id), [seeded.payments[0], undefined, undefined, undefined, seeded.payments[1], undefined])
  })

  test('the live idempotency record lookup, batched, finds what each key finds alone (expired and other accounts\' keys included)', async () => {
    const db = store.db.kysely
    const batched = await Promise.all(keys().map(([account, key]) => idempotency.findLive(db, account, key, now)))
    const alone = await aloneInTransaction(keys(), (trx, [account, key]) => idempotency.findLive(trx, account, key, now))
    assert.deepEqual(batched, alone)
    assert.deepEqual(batched.map((r) => r?.idempotency_key), ['live-first', undefined, undefined, undefined, undefined, undefined, 'live-second', undefined, undefined, undefined])
  })

  test('the mandate and endpoints lookup, batched, finds what each key finds alone', async () => {
    await sql`insert into webhook_endpoints (id, account_id, url, secret, events, status, created_at, updated_at)
      values ('we_batched', ${seeded.accounts[1]!}, 'https://example.com/hook', 'whsec_x', '["*"]', 'enabled', ${now}, ${now})`.execute(store.db.kysely)
    const db = store.db.kysely
    const batched = await Promise.all(pairs(seeded.mandates).map(([account, id]) => payments.readForPayment(db, account, id)))
    const alone = await aloneInTransaction(pairs(seeded.mandates), (trx, [account, id]) => payments.readForPayment(trx, account, id))
    assert.deepEqual(batched, alone)
    assert.deepEqual(batched.map((r) => r.mandate?.id), [seeded.mandates[0], undefined, undefined, undefined, seeded.mandates[1], undefined])
    assert.deepEqual(batched.map((r) => r.endpoints.length), [0, 0, 0, 1, 1, 1])
  })

  test('the enabled endpoints lookup, batched, finds what each account finds alone', async () => {
    await sql`insert into webhook_endpoints (id, account_id, url, secret, events, status, created_at, updated_at)
      values ('we_enabled', ${seeded.accounts[0]!}, 'https://example.com/a', 'whsec_x', '["payment.succeeded"]', 'enabled', ${now}, ${now}),
        ('we_disabled', ${seeded.accounts[0]!}, 'https://example.com/b', 'whsec_x', '["*"]', 'disabled', ${now}, ${now})`.execute(store.db.kysely)
    const accounts = [...seeded.accounts, 'acct_missing']
    const batched = await Promise.all(accounts.map((account) => webhooks.enabledEndpoints(store.db.kysely, account)))
    const alone = await aloneInTransaction(accounts, (trx, account) => webhooks.enabledEndpoints(trx, account))
    assert.deepEqual(batched, alone)
    assert.deepEqual(batched[0], [{ id: 'we_enabled', events: '["payment.succeeded"]' }])
    assert.deepEqual(batched[2], [])
  })

  test('lookups submitted in one turn run as one query; a key the batch cannot take is looked up alone and fails alone', async () => {
    const many = Array.from({ length: 20 }, (_, i) => payments.findPayment(one.kysely, seeded.accounts[i % 2]!, seeded.payments[i % 2]!))
    assert.deepEqual((await Promise.all(many)).map((p) => p?.id), Array.from({ length: 20 }, (_, i) => seeded.payments[i % 2]))
    const { rows } = await sql<{ runs: number }>`select (generic_plans + custom_plans)::int as runs from pg_prepared_statements
      where statement like '%with ordinality%' and statement like '%from payments%'`.execute(one.kysely)
    assert.deepEqual(rows, [{ runs: 1 }])
    // A NUL cannot be text in PostgreSQL: the arrays of the whole batch fail, then each key runs alone.
    const outcomes = await Promise.allSettled([
      payments.findPayment(one.kysely, seeded.accounts[0]!, seeded.payments[0]!),
      payments.findPayment(one.kysely, seeded.accounts[0]!, 'pay_\u0000'),
      payments.findPayment(one.kysely, seeded.accounts[1]!, seeded.payments[1]!),
    ])
    assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'fulfilled'])
    assert.deepEqual(outcomes.map((o) => (o.status === 'fulfilled' ? o.value?.id : undefined)), [seeded.payments[0], undefined, seeded.payments[1]])
  })

  /** Statements of the payments lookup run on `one` so far (each batch is one). */
  const paymentBatches = async () => (await sql<{ runs: number }>`select coalesce(sum(generic_plans + custom_plans), 0)::int as runs
    from pg_prepared_statements where statement like '%with ordinality%' and statement like '%from payments%'`.execute(one.kysely)).rows[0]!.runs

  /** The first account's first payment again, under the id `id` (as no API would name one). */
  const copyOfFirstPayment = (id: string) => sql`insert into payments
    select (jsonb_populate_record(p, jsonb_build_object('id', ${id}::text))).* from payments p where p.id = ${seeded.payments[0]!}`.execute(store.db.kysely)

  test('keys with the characters of an array literal go in one batch and find what they find alone', async () => {
    const odd = ['NULL', 'a"b', 'back\\slash', 'comma,brace}{', ' spaced ', 'ünï\u{1F600}', "it's", '']
    // Each odd id is a payment of the first account, so a key read as anything else finds nothing.
    for (const id of odd) await copyOfFirstPayment(id)
    const before = await paymentBatches()
    const found = await Promise.all([
      payments.findPayment(one.kysely, seeded.accounts[0]!, seeded.payments[0]!),
      ...odd.map((id) => payments.findPayment(one.kysely, seeded.accounts[0]!, id)),
      ...odd.map((account) => payments.findPayment(one.kysely, account, seeded.payments[1]!)),
      payments.findPayment(one.kysely, seeded.accounts[1]!, seeded.payments[1]!),
    ])
    assert.equal(await paymentBatches() - before, 1) // one batch, none of it looked up again key by key
    assert.deepEqual(found.map((p) => p?.id), [seeded.payments[0], ...odd, ...odd.map(() => undefined), seeded.payments[1]])
    assert.deepEqual(found.slice(1, 1 + odd.length).map((p) => p?.account_id), odd.map(() => seeded.accounts[0]))
  })

  test('a batch\'s text[] literal is read back by PostgreSQL as the strings it was made of', async () => {
    const values = ['plain', '', 'NULL', 'null', 'a"b', '"', '\\', 'back\\slash\\', '\\"', 'comma,brace}{', ' spaced ', '\ttab\nline',
      'ünï\u{1F600}', "it's", '{}', 'a,b', '$1', ...Array.from({ length: 40 }, (_, n) => String.fromCharCode(32 + n, 92, 34, 125 - n))]
    const { rows } = await sql<{ v: string }>`select v from unnest(${textArrayLiteral(values)}::text[]) with ordinality as t(v, n) order by n`.execute(one.kysely)
    assert.deepEqual(rows.map((row) => row.v), values)
    assert.equal(textArrayLiteral([]), '{}')
    const { rows: empty } = await sql<{ n: number }>`select cardinality(${textArrayLiteral([])}::text[]) as n`.execute(one.kysely)
    assert.equal(empty[0]!.n, 0)
  })

  test('more keys in a turn than one query takes go as several, each answering its own callers', async () => {
    // 150 lookups: three queries of at most 64 keys, each numbering its keys from 1 again.
    const cases = Array.from({ length: 150 }, (_, n) => {
      const account = seeded.accounts[n % 2]!
      const id = n % 3 === 0 ? 'missing' : seeded.payments[n % 2 === 0 ? 0 : (n % 5 === 0 ? 0 : 1)]!
      return [account, id] as const
    })
    const before = await paymentBatches()
    const batched = await Promise.all(cases.map(([account, id]) => payments.findPayment(one.kysely, account, id)))
    const alone = await aloneInTransaction(cases, (trx, [account, id]) => payments.findPayment(trx, account, id))
    assert.equal(await paymentBatches() - before, 3)
    assert.deepEqual(batched, alone)
    assert.ok(batched.filter(Boolean).length > 40 && batched.some((p) => p === undefined))
  })

  test('while a batch is on its way, the lookups of the next turns wait for it and then go together as one query', async () => {
    const runs = async () => (await sql<{ runs: number }>`select coalesce(sum(generic_plans + custom_plans), 0)::int as runs
      from pg_prepared_statements where statement like '%with ordinality%' and statement like '%from payments%'`.execute(one.kysely)).rows[0]!.runs
    const before = await runs()
    // The one connection is held: the first batch waits for it, on its way, while five more turns pass.
    let release!: () => void
    const held = one.kysely.connection().execute(() => new Promise<void>((resolve) => { release = resolve }))
    const found = [payments.findPayment(one.kysely, seeded.accounts[0]!, seeded.payments[0]!)]
    for (let turn = 1; turn <= 5; turn++) {
      await new Promise(setImmediate)
      found.push(payments.findPayment(one.kysely, seeded.accounts[turn % 2]!, seeded.payments[turn % 2]!))
    }
    release()
    await held
    assert.deepEqual((await Promise.all(found)).map((p) => p?.id), Array.from({ length: 6 }, (_, i) => seeded.payments[i % 2]))
    // The first batch, then one for the five keys of the later turns (one a turn would have been six).
    assert.equal(await runs() - before, 2)
  })

  test('a payment and a mandate are found by their primary key, even by a plan made while the table was small', async () => {
    // PostgreSQL prepares each batched lookup once a connection and may keep a generic plan for it. A
    // plan made while a table holds a few rows, as when a server starts on a new database, costed the
    // account's (account_id, …, id) indexes like the primary key, and one kept on a table that then grew
    // without an ANALYZE walked every entry of the account for each key: a GET /payments/:id went from
    // 15,000 to 600 a second after 26,000 payments (docs/performance.md, twenty-first pass).
    const plans = await one.kysely.connection().execute(async (connection) => {
      await payments.findPayment(connection, seeded.accounts[0]!, seeded.payments[0]!)
      await payments.readForPayment(connection, seeded.accounts[0]!, seeded.mandates[0]!)
      // Each statement's arrays: the accounts, then the payments or the mandates (PostgreSQL array literals).
      const keys = { payments: [`{${seeded.accounts[0]}}`, `{${seeded.payments[0]}}`], mandates: [`{${seeded.accounts[0]}}`, `{${seeded.mandates[0]}}`] }
      const explained: Record<string, string> = {}
      for (const table of ['payments', 'mandates'] as const) explained[table] = await preparedPlan(connection, new RegExp(`^(?=[\\s\\S]*with ordinality)[\\s\\S]*from ${table} where`), keys[table])
      return explained
    })
    for (const table of ['payments', 'mandates']) {
      assert.match(plans[table]!, new RegExp(`Index Scan using ${table}_pkey on ${table}`), plans[table])
      assert.doesNotMatch(plans[table]!, new RegExp(`${table}_account_`), plans[table])
    }
  })
})
