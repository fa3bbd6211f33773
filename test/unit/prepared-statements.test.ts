import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import type pg from 'pg'
import { type Database, openDatabase } from '../../src/db/database.js'
import { PreparingClient } from '../../src/db/prepared-statements.js'
import { planChanged } from '../../src/db/statement-names.js'
import { compilable, fromTemplate } from '../../src/db/query-template.js'
import { createStatementBatch } from '../../src/db/statement-batch.js'
import { openStore, type PostgresTestStore } from '../helpers/stores.js'

/**
 * PostgreSQL's prepared statements (src/db/prepared-statements.ts, src/db/pg-script.ts): a templated
 * query, through Kysely or in a statement batch's script, is prepared once per connection and then run
 * by name; when another connection changes the columns it returns, it is prepared again rather than
 * failing every later run.
 */

const pgUrl = process.env.TEST_DATABASE_URL

describe('prepared statements (postgres)', { skip: !pgUrl && 'PostgreSQL only (TEST_DATABASE_URL not set)' }, () => {
  let store: PostgresTestStore
  /** One connection, so that what one query prepared is there for the next, and visible to the test. */
  let one: Database

  before(async () => {
    store = await openStore('postgres')
    one = openDatabase({ databaseUrl: pgUrl!, postgresSchema: store.postgres.schema, poolSize: 1 })
    await sql`create table things (id text primary key, label text)`.execute(store.db.kysely)
    await sql`insert into things (id, label) values ('a', 'first'), ('b', 'second')`.execute(store.db.kysely)
  })
  after(async () => {
    await one.close()
    await store.close()
  })

  /** `select * from <table> where id = $1` as a template: the result's columns are the table's. */
  const findIn = (db: Database, table: string, id: string) =>
    fromTemplate<Record<string, unknown>>(db.kysely, `test find ${table}`, [id], ([slot]) => compilable(db.kysely, sql`select * from ${sql.table(table)} where id = ${slot}`))
  /** The connection's prepared statements that read `table`, with how often each ran. */
  const preparedOn = async (db: Database, table: string) => (await sql<{ name: string, from_sql: boolean, runs: number }>`
    select name, from_sql, (generic_plans + custom_plans)::int as runs from pg_prepared_statements
    where statement like ${`%${table}%`} and name like 'wishpay_%' order by name`.execute(db.kysely)).rows

  test('a templated query run through Kysely is prepared once on the connection and then run by name', async () => {
    for (const id of ['a', 'b', 'a', 'b', 'a', 'b', 'a', 'b', 'a', 'b']) {
      const { rows } = await one.kysely.executeQuery(findIn(one, 'things', id))
      assert.equal(rows[0]!.id, id)
    }
    const prepared = await preparedOn(one, 'things')
    assert.equal(prepared.length, 1)
    assert.equal(prepared[0]!.from_sql, false)
    assert.equal(prepared[0]!.runs, 10)
  })

  test('the statements of a batch are prepared once on the connection and run by EXECUTE', async () => {
    await sql`create table notes (id text primary key, body text)`.execute(store.db.kysely)
    const batch = createStatementBatch(one.postgres!, { maxInFlight: 1 })
    const insert = (id: string) => fromTemplate(one.kysely, 'test insert note', [id, `body of ${id}`], ([i, b]) => compilable(one.kysely, sql`insert into notes (id, body) values (${i}, ${b}) returning id`))
    // Twelve together (one script), then three alone.
    const together = await Promise.all(Array.from({ length: 12 }, (_, i) => batch.run(insert(`n${i}`), `n${i}`)))
    for (const id of ['x', 'y', 'z']) await batch.run(insert(id), id)
    assert.deepEqual(together.map((r) => (r.rows[0] as { id: string }).id), Array.from({ length: 12 }, (_, i) => `n${i}`))
    const prepared = await preparedOn(one, 'notes')
    assert.equal(prepared.length, 1)
    assert.equal(prepared[0]!.from_sql, true)
    assert.equal(prepared[0]!.runs, 15)
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from notes`.execute(store.db.kysely)
    assert.equal(rows[0]!.n, 15)
  })

  test('after another connection adds a column, a prepared select * is prepared again: at once outside a transaction', async () => {
    await sql`create table widgets (id text primary key)`.execute(store.db.kysely)
    await sql`insert into widgets (id) values ('w')`.execute(store.db.kysely)
    assert.deepEqual((await one.kysely.executeQuery(findIn(one, 'widgets', 'w'))).rows, [{ id: 'w' }])
    await sql`alter table widgets add column colour text not null default 'red'`.execute(store.db.kysely)
    assert.deepEqual((await one.kysely.executeQuery(findIn(one, 'widgets', 'w'))).rows, [{ id: 'w', colour: 'red' }])
  })

  test('inside a transaction the run fails with its transaction, and the next run outside it succeeds', async () => {
    await sql`create table gadgets (id text primary key)`.execute(store.db.kysely)
    await sql`insert into gadgets (id) values ('g')`.execute(store.db.kysely)
    await one.kysely.executeQuery(findIn(one, 'gadgets', 'g'))
    await sql`alter table gadgets add column size int not null default 3`.execute(store.db.kysely)
    await assert.rejects(one.kysely.transaction().execute((trx) => trx.executeQuery(findIn(one, 'gadgets', 'g'))), planChanged)
    assert.deepEqual((await one.kysely.executeQuery(findIn(one, 'gadgets', 'g'))).rows, [{ id: 'g', size: 3 }])
  })

  test('a batch statement whose result changed is prepared again, and its script run once more', async () => {
    await sql`create table gizmos (id text primary key)`.execute(store.db.kysely)
    const batch = createStatementBatch(one.postgres!, { maxInFlight: 1 })
    const upsert = (id: string) => fromTemplate(one.kysely, 'test upsert gizmo', [id], ([i]) =>
      compilable(one.kysely, sql`insert into gizmos (id) values (${i}) on conflict (id) do update set id = excluded.id returning *`))
    assert.deepEqual((await batch.run(upsert('a'), 'a')).rows, [{ id: 'a' }])
    await sql`alter table gizmos add column weight int not null default 7`.execute(store.db.kysely)
    const results = await Promise.all(['a', 'b', 'c'].map((id) => batch.run(upsert(id), id)))
    assert.deepEqual(results.map((r) => r.rows), [[{ id: 'a', weight: 7 }], [{ id: 'b', weight: 7 }], [{ id: 'c', weight: 7 }]])
    assert.deepEqual((await batch.run(upsert('d'), 'd')).rows, [{ id: 'd', weight: 7 }])
  })

  test('with prepared statements off (a transaction-mode pooler), nothing is prepared and a batch runs each statement alone', async () => {
    const off = openDatabase({ databaseUrl: pgUrl!, postgresSchema: store.postgres.schema, poolSize: 1, preparedStatements: false })
    try {
      assert.deepEqual((await off.kysely.executeQuery(findIn(off, 'things', 'a'))).rows, [{ id: 'a', label: 'first' }])
      const batch = createStatementBatch(off.postgres!, { maxInFlight: 1 })
      const txid = (i: number) => fromTemplate<{ tx: string, i: string }>(off.kysely, 'test txid', [String(i)], ([slot]) => compilable(off.kysely, sql`select txid_current()::text as tx, ${slot}::text as i`))
      const results = await Promise.all(Array.from({ length: 5 }, (_, i) => batch.run(txid(i), 'k')))
      assert.deepEqual(results.map((r) => r.rows[0]!.i), ['0', '1', '2', '3', '4'])
      assert.equal(new Set(results.map((r) => r.rows[0]!.tx)).size, 5)
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_prepared_statements`.execute(off.kysely)
      assert.equal(rows[0]!.n, 0)
    } finally {
      await off.close()
    }
  })

  test('EXECUTE arguments are exact whatever standard_conforming_strings says', async () => {
    await sql`create table texts (id text primary key, body text)`.execute(store.db.kysely)
    const batch = createStatementBatch(one.postgres!, { maxInFlight: 1 })
    const insert = (id: string, body: string) => fromTemplate(one.kysely, 'test insert text', [id, body], ([i, b]) => compilable(one.kysely, sql`insert into texts (id, body) values (${i}, ${b})`))
    const bodies = ["\\'); drop table texts; --", "\\", "it\\'s", "'\\'"]
    try {
      await sql`set standard_conforming_strings = off`.execute(one.kysely)
      await Promise.all(bodies.map((body, i) => batch.run(insert(`off${i}`, body), `off${i}`)))
    } finally {
      await sql`set standard_conforming_strings = on`.execute(one.kysely)
    }
    await Promise.all(bodies.map((body, i) => batch.run(insert(`on${i}`, body), `on${i}`)))
    const { rows } = await sql<{ id: string, body: string }>`select id, body from texts order by id`.execute(store.db.kysely)
    assert.deepEqual(rows.map((r) => r.body), [...bodies, ...bodies])
  })

  test('without prepared names, several statements run one at a time in one transaction: all or none', async () => {
    const off = openDatabase({ databaseUrl: pgUrl!, postgresSchema: store.postgres.schema, poolSize: 1, preparedStatements: false })
    try {
      await sql`create table pairs (id text primary key)`.execute(off.kysely)
      const insert = (id: string) => sql`insert into pairs (id) values (${id})`.compile(off.kysely)
      await off.postgres!.runTogether([insert('a'), insert('b')])
      await assert.rejects(off.postgres!.runTogether([insert('c'), insert('a')]), /duplicate key/)
      const { rows } = await sql<{ id: string }>`select id from pairs order by id`.execute(off.kysely)
      assert.deepEqual(rows.map((r) => r.id), ['a', 'b'])
    } finally {
      await off.close()
    }
  })

  test('a query unanswered for the read timeout fails with "Query read timeout"; the connection closes, and what was queued behind it never runs', async () => {
    await sql`create table late (id text primary key)`.execute(store.db.kysely)
    // Typed as node-pg's client: PreparingClient's override declares no result type of its own.
    const client: pg.Client = new PreparingClient({ connectionString: pgUrl!, query_timeout: 300, options: `-c search_path=${store.postgres.schema}` })
    client.on('error', () => {})
    await client.connect()
    const { rows: [backend] } = await client.query<{ pid: number }>('select pg_backend_pid() as pid')
    // Queuing a second query on one client makes node-pg print a deprecation warning (pg 9 will refuse it):
    // the service never does (each caller holds its pooled client alone); this test does, to show a
    // query queued behind one that timed out is dropped, never sent.
    const sleeping = client.query('select pg_sleep(3)')
    const queued = client.query('insert into late (id) values ($1)', ['queued'])
    await assert.rejects(sleeping, /Query read timeout/)
    await assert.rejects(queued)
    await assert.rejects(client.query('select 1'))
    // Once PostgreSQL has let the sleeping backend go, the insert has still not run: it was never sent.
    for (let polls = 0; ; polls++) {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where pid = ${backend!.pid}`.execute(store.db.kysely)
      if (rows[0]!.n === 0) break
      assert.ok(polls < 400, 'the sleeping backend ended')
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const { rows } = await sql<{ id: string }>`select id from late`.execute(store.db.kysely)
    assert.deepEqual(rows, [])
  })
})
