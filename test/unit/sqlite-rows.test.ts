import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import SQLite from 'better-sqlite3'
import { allRows } from '../../src/db/sqlite-rows.js'

/**
 * src/db/sqlite-rows.ts builds rows from better-sqlite3's arrays: every row must be what better-sqlite3's
 * own `all()` returns for the same statement, property order and types included.
 */
describe('allRows (sqlite)', () => {
  const db = new SQLite(':memory:')
  db.exec(`create table t (id text primary key, n integer, x real, b blob, j text, "weird ""name""" text, "1" text);
    insert into t values ('a', 1, 1.5, x'00ff', '{"k":[1]}', 'w', 'one'), ('b', null, null, null, null, null, null)`)

  /** Both ways, on two statements of the same text (a statement is either raw or not). */
  const both = (text: string, parameters: unknown[] = []) => ({
    ours: allRows(db.prepare(text), parameters),
    theirs: db.prepare(text).all(...parameters),
  })

  const cases: Array<[string, string, unknown[]?]> = [
    ['every column type, nulls, a quoted name and a numeric one', 'select * from t order by id'],
    ['parameters', 'select id, n from t where id = ?', ['a']],
    ['no rows', 'select * from t where id = ?', ['none']],
    ['a repeated name keeps its first place and its last value', 'select id, n as v, x as v, j from t order by id'],
    ['expressions and aliases', `select count(*) as count, max(n) + 1, 'it''s' as "quote" from t`],
  ]
  for (const [name, text, parameters] of cases) {
    test(name, () => {
      const { ours, theirs } = both(text, parameters)
      assert.deepStrictEqual(ours, theirs) // prototypes included
      assert.deepStrictEqual(ours.map((row) => Object.keys(row as object)), theirs.map((row) => Object.keys(row as object)))
    })
  }

  test('a column named __proto__ is an own property, the prototype untouched (as node-pg makes it; better-sqlite3 drops it)', () => {
    const rows = allRows(db.prepare('select id as __proto__, n from t order by id'), []) as Array<Record<string, unknown>>
    assert.deepStrictEqual(rows.map((row) => Object.keys(row)), [['__proto__', 'n'], ['__proto__', 'n']])
    assert.deepStrictEqual(rows.map((row) => Object.getOwnPropertyDescriptor(row, '__proto__')?.value), ['a', 'b'])
    assert.ok(rows.every((row) => Object.getPrototypeOf(row) === Object.prototype))
  })

  test('the same statement answers the same way on every run', () => {
    const statement = db.prepare('select id, n from t where id = ?')
    for (const id of ['a', 'b', 'a']) assert.deepStrictEqual(allRows(statement, [id]), db.prepare('select id, n from t where id = ?').all(id))
  })
})
