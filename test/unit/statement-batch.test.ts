import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type RawBuilder, sql } from 'kysely'
import { openDatabase } from '../../src/db/database.js'
import { isDatabaseUnavailable, isUniqueViolation } from '../../src/db/errors.js'
import { createStatementBatch, type StatementBatchOptions } from '../../src/db/statement-batch.js'
import { startLossyProxy } from '../helpers/lossy-proxy.js'
import { openStore, type PostgresTestStore } from '../helpers/stores.js'

/**
 * PostgreSQL's group commit (src/db/statement-batch.ts): statements submitted together share one
 * transaction, each caller gets its own statement's outcome, a failing statement takes nothing of the
 * others with it, statements on the same rows from batches in flight at once never deadlock, and a
 * transaction whose outcome is unknown (its acknowledgement lost) is never run again.
 */

const pgUrl = process.env.TEST_DATABASE_URL

describe('statement batch (postgres)', { skip: !pgUrl && 'PostgreSQL only (TEST_DATABASE_URL not set)' }, () => {
  let store: PostgresTestStore
  const kysely = () => store.db.kysely

  before(async () => {
    store = await openStore('postgres')
    await sql`create table counters (id text primary key, n integer not null check (n >= 0))`.execute(kysely())
    await sql`create table notes (id text primary key)`.execute(kysely())
  })
  after(async () => { await store.close() })

  const batchOf = (options?: StatementBatchOptions) => createStatementBatch(store.db.postgres!, options)
  const q = <R>(statement: RawBuilder<R>) => statement.compile(kysely())
  const txid = () => sql<{ tx: string }>`select txid_current()::text as tx`
  /** Takes an advisory lock in a transaction of its own; `release` ends it, `done` once it ended. */
  const holdAdvisoryLock = async (key: number) => {
    let locked!: () => void
    let release!: () => void
    const isLocked = new Promise<void>((resolve) => { locked = resolve })
    const done = kysely().transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${key})`.execute(trx)
      locked()
      await new Promise<void>((resolve) => { release = resolve })
    })
    await isLocked
    return { release: () => release(), done }
  }

  test('statements submitted in the same turn run in one transaction; one submitted alone runs in its own', async () => {
    const batch = batchOf({ maxInFlight: 1 })
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => batch.run(q(txid()), `k${i % 3}`)))
    assert.equal(new Set(results.map((r) => r.rows[0]!.tx)).size, 1)
    const alone = await batch.run(q(txid()), 'k')
    assert.notEqual(alone.rows[0]!.tx, results[0]!.rows[0]!.tx)
  })

  test('an item of several statements runs them in order in the shared transaction, and resolves with the last one\'s rows', async () => {
    const batch = batchOf({ maxInFlight: 1 })
    await sql`create table pairs (id text primary key, n integer not null)`.execute(kysely())
    const results = await Promise.all(['p', 'q', 'r'].map((id) => batch.run([
      q(sql`insert into pairs (id, n) values (${id}, 1)`),
      q(sql<{ n: number, tx: string }>`update pairs set n = n + 1 where id = ${id} returning n, txid_current()::text as tx`),
    ], id)))
    assert.deepEqual(results.map((r) => (r.rows[0] as { n: number }).n), [2, 2, 2])
    assert.equal(new Set(results.map((r) => (r.rows[0] as { tx: string }).tx)).size, 1)
  })

  /** The shared commits the store reports while `work` runs (db/shared-commits.ts). */
  const reportedDuring = async (work: () => Promise<unknown>) => {
    const reports: Array<{ writes: number, seconds: number }> = []
    const stop = store.db.sharedCommits.listen((writes, seconds) => reports.push({ writes, seconds }))
    const startedAt = performance.now()
    try {
      await work()
    } finally {
      stop()
    }
    return { reports, wallSeconds: (performance.now() - startedAt) / 1000 }
  }

  test('a batch is at most maxBatch statements, and what waits while one is in flight forms the next', async () => {
    const batch = batchOf({ maxBatch: 8, maxInFlight: 1 })
    let results: Array<{ rows: Array<{ tx: string }> }> = []
    const { reports, wallSeconds } = await reportedDuring(async () => {
      results = await Promise.all(Array.from({ length: 30 }, () => batch.run(q(txid()), 'k')))
    })
    const sizes = new Map<string, number>()
    for (const r of results) sizes.set(r.rows[0]!.tx, (sizes.get(r.rows[0]!.tx) ?? 0) + 1)
    assert.deepEqual([...sizes.values()].sort((a, b) => a - b), [6, 8, 8, 8])
    // Each transaction reported once, with its statements, in seconds.
    assert.deepEqual(reports.map((r) => r.writes).sort((a, b) => a - b), [6, 8, 8, 8])
    for (const { seconds } of reports) assert.ok(seconds > 0 && seconds <= wallSeconds, `${seconds} s of ${wallSeconds}`)
  })

  test('by default one transaction is in flight: statements of the turns while it runs form the next one', async () => {
    const batch = batchOf()
    // The first statement waits for an advisory lock the test holds, so it stays in flight meanwhile.
    const holder = await holdAdvisoryLock(4242)
    const first = batch.run(q(sql<{ tx: string }>`select txid_current()::text as tx from (select pg_advisory_xact_lock(4242)) as l`), 'k')
    // It left on the turn after it was submitted; five statements follow, one a turn.
    await new Promise(setImmediate)
    const later: Array<Promise<{ rows: Array<{ tx: string }> }>> = []
    for (let turn = 0; turn < 5; turn++) {
      later.push(batch.run(q(txid()), `k${turn}`))
      await new Promise(setImmediate)
    }
    holder.release()
    await holder.done
    const tx = [(await first).rows[0]!.tx, ...(await Promise.all(later)).map((r) => r.rows[0]!.tx)]
    assert.notEqual(tx[1], tx[0])
    assert.equal(new Set(tx.slice(1)).size, 1, 'the five later statements share one transaction')
  })

  test('a failing statement rejects its own caller only: the others of its batch commit, each exactly once', async () => {
    const batch = batchOf()
    await sql`insert into notes (id) values ('taken')`.execute(kysely())
    const ids = ['a', 'b', 'taken', 'c', 'd']
    let outcomes: Array<PromiseSettledResult<unknown>> = []
    const { reports } = await reportedDuring(async () => {
      outcomes = await Promise.allSettled(ids.map((id) => batch.run(q(sql`insert into notes (id) values (${id}) returning id`), id)))
    })
    assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'])
    // The shared transaction rolled back (not a commit); the four that ran again alone each committed one.
    assert.deepEqual(reports.map((r) => r.writes), [1, 1, 1, 1])
    assert.match(String((outcomes[2] as PromiseRejectedResult).reason), /duplicate key/)
    const rows = await sql<{ id: string }>`select id from notes order by id`.execute(kysely())
    assert.deepEqual(rows.rows.map((r) => r.id), ['a', 'b', 'c', 'd', 'taken'])
  })

  test('after a shared transaction fails, its statements run again alone without holding up the next batch', async () => {
    const batch = batchOf()
    await sql`insert into notes (id) values ('held-taken')`.execute(kysely())
    // The test holds an advisory lock, so that one statement's run alone waits for it.
    const holder = await holdAdvisoryLock(4343)
    const order: string[] = []
    // Sorted by lock key, the duplicate runs first and fails the shared transaction before the lock is asked for.
    const failing = batch.run(q(sql`insert into notes (id) values ('held-taken')`), 'a')
    const waiting = batch.run(q(sql`select pg_advisory_xact_lock(4343)`), 'b').then(() => { order.push('rerun') })
    await assert.rejects(failing, /duplicate key/)
    // The failing statement's run alone is over; the other's waits for the lock. A new statement:
    const next = batch.run(q(txid()), 'c').then(() => { order.push('next') })
    // Released once the new statement is answered; the timer only ends the test if it never is.
    const fallback = setTimeout(() => holder.release(), 10_000)
    await next.finally(() => { clearTimeout(fallback); holder.release() })
    await Promise.all([holder.done, waiting])
    assert.deepEqual(order, ['next', 'rerun'])
  })

  const losses = { drop: 'the connection dropped', silence: 'no answer in time', garble: 'an answer that cannot be read' } as const
  for (const how of ['drop', 'silence', 'garble'] as const) {
    test(`a shared transaction whose commit is not acknowledged (${losses[how]}) fails every caller at once, and runs no statement again`, async () => {
      const table = `acked_${how}`
      await sql`create table ${sql.table(table)} (id text primary key)`.execute(kysely())
      const insert = (id: string) => q(sql`insert into ${sql.table(table)} (id) values (${id})`)
      const proxy = await startLossyProxy(store.postgres.url)
      // One connection, opened and with the statement prepared before the answer is lost; a query timeout
      // that gives up on the silent answer sooner than the serving one, with room for a busy machine.
      const db = openDatabase({ databaseUrl: proxy.url, postgresSchema: store.postgres.schema, poolSize: 1, queryTimeoutMs: 3000 })
      try {
        const batch = createStatementBatch(db.postgres!, { maxInFlight: 1 })
        await batch.run(insert('warm'), 'warm')
        const ids = [1, 2, 3, 4].map((n) => `lost-ack-${how}-${n}`)
        proxy.loseAnswer({ when: (message) => message.includes(`lost-ack-${how}-`), how })
        const outcomes = await Promise.allSettled(ids.map((id) => batch.run(insert(id), id)))
        // Whether it committed, no caller could know: each gets the failure (an outage's is a 503, which
        // a payment's retry with its idempotency key settles), not a duplicate key from a run of its own again.
        for (const outcome of outcomes) {
          assert.equal(outcome.status, 'rejected')
          assert.equal(isUniqueViolation(outcome.reason), false, String(outcome.reason))
          if (how !== 'garble') assert.equal(isDatabaseUnavailable(outcome.reason), true, String(outcome.reason))
        }
        assert.equal(proxy.matched(), 1, 'the statements reached PostgreSQL once')
        assert.equal(proxy.lost(), 1)
        await proxy.answered()
        const rows = await sql<{ id: string }>`select id from ${sql.table(table)} where id <> 'warm' order by id`.execute(kysely())
        assert.deepEqual(rows.rows.map((r) => r.id), ids, 'the transaction committed, once')
        // The batch goes on: the pool replaced the lost connection.
        await batch.run(insert('after'), 'after')
      } finally {
        try {
          await db.close()
        } finally {
          await proxy.close()
        }
      }
    })
  }

  test('a value that cannot be sent fails its own caller at submission, and the others of its turn commit together', async () => {
    const batch = batchOf({ maxInFlight: 1 })
    await sql`create table sendable (id text primary key)`.execute(kysely())
    const ok = ['s1', 's2', 's3'].map((id) => batch.run(q(sql<{ tx: string }>`insert into sendable (id) values (${id}) returning txid_current()::text as tx`), id))
    await assert.rejects(batch.run(q(sql`insert into sendable (id) values (${{ not: 'a value' }})`), 's0'), /cannot be an EXECUTE argument/)
    const tx = (await Promise.all(ok)).map((r) => r.rows[0]!.tx)
    assert.equal(new Set(tx).size, 1)
  })

  test('values travel as literals exactly: quotes, backslashes, placeholders, SQL, unicode, null, big numbers', async () => {
    const batch = batchOf()
    await sql`create table odd (id text primary key, body text, n bigint)`.execute(kysely())
    const values = ["o'brien", 'back\\slash \\x00', '$1 $2', "'); drop table notes; --", 'ünï €😀', '\n\t', "''"]
    await Promise.all(values.map((v, i) => batch.run(q(sql`insert into odd (id, body, n) values (${`v${i}`}, ${v}, ${i === 0 ? null : 10 ** 12 + i})`), `v${i}`)))
    const rows = await sql<{ id: string, body: string, n: string | null }>`select id, body, n::text from odd order by id`.execute(kysely())
    assert.deepEqual(rows.rows.map((r) => r.body), values)
    assert.deepEqual(rows.rows.map((r) => r.n), [null, ...values.slice(1).map((_, i) => String(10 ** 12 + i + 1))])
    // The value that reads as SQL stayed a value: the table it names is still there.
    assert.equal((await sql<{ t: string | null }>`select to_regclass('notes')::text as t`.execute(kysely())).rows[0]!.t, 'notes')
  })

  test('200 conditional decrements over 5 shared rows, in batches in flight at once: no deadlock, never below zero', async () => {
    const batch = batchOf({ maxBatch: 16, maxInFlight: 4 })
    const rows = ['r1', 'r2', 'r3', 'r4', 'r5']
    await sql`insert into counters (id, n) values ${sql.join(rows.map((id) => sql`(${id}, 30)`))}`.execute(kysely())
    // Each caller takes one from a row, in an order that differs between callers.
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => {
      const id = rows[(i * 7) % rows.length]!
      return batch.run(q(sql<{ id: string }>`update counters set n = n - 1 where id = ${id} and n > 0 returning id`), id)
    }))
    const taken = results.filter((r) => r.rows.length === 1).length
    assert.equal(taken, 150)
    const left = await sql<{ n: number }>`select sum(n)::int as n from counters`.execute(kysely())
    assert.equal(left.rows[0]!.n, 0)
  })
})
