import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import SQLite from 'better-sqlite3'
import { allRows, runWrite } from '../../src/db/sqlite-rows.js'

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

/**
 * allRows and runWrite hand a statement's parameters to better-sqlite3 as arguments of their own when that
 * binds them the same as one array would: every kind of value binds as before, and a value that would
 * mean something else as an argument (an array, a plain object) is refused as before, not reinterpreted.
 */
describe('parameters as arguments (sqlite)', () => {
  const db = new SQLite(':memory:')
  db.exec('create table p (a, b, c, d, e)')
  const insert = db.prepare('insert into p values (?, ?, ?, ?, ?)')
  const select = db.prepare('select * from p where rowid = ?')

  test('strings, numbers, bigints, null and a Buffer bind as they do in an array', () => {
    const values = ['text', 1.5, 9007199254740993n, null, Buffer.from([0, 255])]
    const { changes, lastInsertRowid } = runWrite(insert, values)
    assert.equal(changes, 1)
    // A statement of its own: allRows made `select` return arrays.
    assert.deepStrictEqual(allRows(select, [lastInsertRowid]), db.prepare('select * from p where rowid = ?').all([lastInsertRowid]))
    assert.deepStrictEqual(Object.values((allRows(select, [lastInsertRowid]) as object[])[0]!), ['text', 1.5, 9007199254740992, null, Buffer.from([0, 255])])
  })

  test('an array or plain object among them is refused, as it is in an array; a one-element array is not unwrapped', () => {
    for (const odd of [['one'], ['one', 'two'], { a: 1 }, new Date(0)]) {
      const values = ['x', odd, 3, 4, 5]
      assert.throws(() => insert.run(values), `better-sqlite3 refuses ${JSON.stringify(odd)} in an array`)
      assert.throws(() => runWrite(insert, values), `and so does runWrite: ${JSON.stringify(odd)}`)
      assert.throws(() => allRows(db.prepare('select ?, ?, ?, ?, ?'), values))
    }
  })

  test('too few or too many values fail as they do in an array', () => {
    assert.throws(() => runWrite(insert, [1, 2, 3, 4]), /Too few parameter values/)
    assert.throws(() => runWrite(insert, [1, 2, 3, 4, 5, 6]), /Too many parameter values/)
  })

  test('past 256 values they go as one array, and still bind', () => {
    const text = `select ${Array.from({ length: 1000 }, () => '?').join(' + ')} as total`
    const values = Array.from({ length: 1000 }, (_, i) => i)
    assert.deepStrictEqual(allRows(db.prepare(text), values), [{ total: 499500 }])
  })
})
