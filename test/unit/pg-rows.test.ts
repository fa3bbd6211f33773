import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { PreparingClient } from '../../src/db/prepared-statements.js'
import { openStore, type PostgresTestStore } from '../helpers/stores.js'

/**
 * PreparingClient reads rows as arrays and makes them objects itself (src/db/pg-rows.ts): every row must
 * be what node-pg's own object rows are for the same query, property order, prototype and types included.
 */

const pgUrl = process.env.TEST_DATABASE_URL

describe('object rows from array rows (postgres)', { skip: !pgUrl && 'PostgreSQL only (TEST_DATABASE_URL not set)' }, () => {
  let store: PostgresTestStore
  let ours: PreparingClient
  let theirs: pg.Client

  before(async () => {
    store = await openStore('postgres')
    const config = { connectionString: store.postgres.url, options: `-c search_path=${store.postgres.schema}` }
    ours = new PreparingClient(config)
    theirs = new pg.Client(config)
    await Promise.all([ours.connect(), theirs.connect()])
    await theirs.query(`create table t (id text primary key, n integer, x numeric, f double precision, ok boolean, j jsonb,
      at timestamptz, b bytea, "weird ""name""" text, "1" text)`)
    await theirs.query(`insert into t values ('a', 1, 1.5, 2.25, true, '{"k":[1]}', '2026-11-28T12:00:00.123Z', '\\x00ff', 'w', 'one'),
      ('b', null, null, null, null, null, null, null, null, null)`)
  })
  after(async () => {
    await Promise.all([ours?.end(), theirs?.end()])
    await store?.close()
  })

  /** The rows both ways: through PreparingClient's promise form, and node-pg's own. */
  async function both(text: string, values?: unknown[]) {
    const [a, b] = await Promise.all([ours.query(text, values) as unknown as Promise<pg.QueryResult>, theirs.query(text, values)])
    return { ours: a.rows, theirs: b.rows }
  }
  function assertSame(rows: { ours: unknown[], theirs: unknown[] }) {
    assert.deepStrictEqual(rows.ours, rows.theirs) // prototypes included
    assert.deepStrictEqual(rows.ours.map((row) => Object.keys(row as object)), rows.theirs.map((row) => Object.keys(row as object)))
  }

  const cases: Array<[string, string, unknown[]?]> = [
    ['every column type, nulls, a quoted name and a numeric one', 'select * from t order by id'],
    ['parameters', 'select id, n from t where id = $1', ['a']],
    ['no rows', 'select * from t where id = $1', ['none']],
    ['a repeated name keeps its first place and its last value', 'select id, n as v, x as v, j from t order by id'],
    ['expressions and aliases', `select count(*)::int as count, max(n) + 1, 'it''s' as "quote" from t`],
    ['a column named __proto__ is an own property, the prototype untouched', 'select id as "__proto__", n from t order by id'],
    ['columns of the same first name but others after it', 'select id, ok from t order by id'],
  ]
  for (const [name, text, values] of cases) {
    test(name, async () => assertSame(await both(text, values)))
  }

  test('a column named __proto__ does not set the prototype', async () => {
    const { rows } = await (ours.query(`select '{}'::json as "__proto__"`) as unknown as Promise<pg.QueryResult>)
    assert.equal(Object.getPrototypeOf(rows[0]), Object.prototype)
    assert.deepStrictEqual(Object.getOwnPropertyDescriptor(rows[0], '__proto__')?.value, {})
  })

  test('each statement of a script gets rows of its own columns', async () => {
    const script = 'select id from t order by id; select n, id from t order by id; select id, ok from t where false'
    const [a, b] = await Promise.all([ours.query(script) as unknown as Promise<pg.QueryResult[]>, theirs.query(script) as unknown as Promise<pg.QueryResult[]>])
    assert.equal(a.length, 3)
    for (let i = 0; i < 3; i++) assertSame({ ours: a[i]!.rows, theirs: b[i]!.rows })
  })

  test('rows follow a change of the columns a query returns', async () => {
    await theirs.query('create table c (id text primary key)')
    await theirs.query(`insert into c values ('a')`)
    assertSame(await both('select * from c'))
    await theirs.query('alter table c add column later text')
    await theirs.query(`update c set later = 'then'`)
    const rows = await both('select * from c')
    assertSame(rows)
    assert.deepStrictEqual(rows.ours, [{ id: 'a', later: 'then' }])
  })

  test('a caller that asks for array rows gets arrays', async () => {
    const { rows } = await (ours.query({ text: 'select id, n from t order by id', rowMode: 'array' } as pg.QueryConfig) as unknown as Promise<pg.QueryResult>)
    assert.deepStrictEqual(rows, [['a', 1], ['b', null]])
  })
})
