import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { sql } from 'kysely'
import { columnListName, fromTemplate, insertRows, shapeOf } from '../../src/db/query-template.js'
import { reusableQuery } from '../../src/db/reusable-query.js'
import { type HoldRequest, holdQuery, holdStatement } from '../../src/modules/mandates/repository.js'
import { migratedStoreForSuite } from '../helpers/suite-store.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Templates (src/db/query-template.ts) compile to what Kysely builds each time, value for value, and
 * reusableQuery (src/db/reusable-query.ts), built on them, runs each call with its own arguments; on both stores.
 */
test('a column list\'s name is the same for the same names in the same order, and differs otherwise', () => {
  const lists = [['id', 'name'], ['name', 'id'], ['id'], ['id', 'name', 'created_at'], ['id', 'nam'], ['i', 'dname'], ['id,name'], []]
  const names = lists.map((columns) => columnListName(columns))
  assert.equal(new Set(names).size, lists.length, JSON.stringify(names))
  // Other arrays of the same names, some of them made at run time, in any order of asking.
  for (const [i, columns] of [...lists.entries()].reverse()) assert.equal(columnListName(columns.map((c) => `${c.slice(0, 1)}${c.slice(1)}`)), names[i])
  assert.equal(columnListName(Object.keys({ id: 1, name: 2 })), names[0])
})

test('a shape is its parts joined by spaces, the same for the same parts however they were made', () => {
  const made = (text: string) => `${text.slice(0, 1)}${text.slice(1)}`
  assert.equal(shapeOf(['insert', 'events', 1, '#0']), 'insert events 1 #0')
  assert.equal(shapeOf(['hold', true, 5]), 'hold true 5')
  assert.equal(shapeOf(['hold', false, 5]), 'hold false 5')
  assert.equal(shapeOf([]), '')
  // Asked again, with parts made at run time: the same text.
  assert.equal(shapeOf([made('insert'), made('events'), 1, made('#0')]), 'insert events 1 #0')
  assert.equal(shapeOf(['insert', 'events', 2, '#0']), 'insert events 2 #0')
  // A shape made of another shape.
  assert.equal(shapeOf(['write plan', shapeOf(['hold', true, 5]), shapeOf(['events', 'row', '#1'])]), 'write plan hold true 5 events row #1')
})

for (const kind of storeKinds()) {
  describe(`query templates (${kind.name})`, () => {
    const suite = migratedStoreForSuite(kind, async (db) => {
      await db.kysely.insertInto('accounts').values([
        { id: 'acct_a', name: 'a', created_at: '2026-11-24T12:00:00.000Z' },
        { id: 'acct_b', name: 'b', created_at: '2026-11-24T12:00:01.000Z' },
      ]).execute()
    })

    const plain = (query: { compile(): { sql: string, parameters: readonly unknown[] } }) => {
      const { sql: text, parameters } = query.compile()
      return { sql: text, parameters }
    }
    const filled = (query: { sql: string, parameters: readonly unknown[] }) => ({ sql: query.sql, parameters: query.parameters })

    test('a hold of every shape compiles to holdQuery\'s SQL and parameters, whichever shape came first', () => {
      const base: HoldRequest = { accountId: 'acct_1', mandateId: 'mdt_1', amount: 250, currency: 'USD', now: '2026-11-24T10:00:00.000Z' }
      const shapes: HoldRequest[] = [
        base,
        { ...base, consume: true },
        { ...base, agentId: 'agt_1', amount: 7 },
        { ...base, recurrenceFloor: '2026-10-24T10:00:00.000Z', unchangedSince: '2026-11-01T00:00:00.000Z' },
        { ...base, consume: true, agentId: 'agt_2', recurrenceFloor: '2026-10-24T10:00:00.000Z', unchangedSince: '2026-11-02T00:00:00.000Z' },
        { ...base, amount: 1, currency: 'EUR', now: '2026-11-25T00:00:00.000Z' },
      ]
      for (const request of [...shapes, ...shapes.reverse()]) {
        assert.deepEqual(filled(holdStatement(suite.db.kysely, request)), plain(holdQuery(suite.db.kysely, request)), JSON.stringify(request))
      }
    })

    test('inserts compile to Kysely\'s, with undefined columns left out, and rows of different columns fall back to Kysely', () => {
      const row = (id: string, extra: Record<string, unknown> = {}) => ({ id, name: `name ${id}`, created_at: '2026-11-24T10:00:00.000Z', ...extra })
      const reordered = { created_at: '2026-11-24T10:00:00.000Z', id: 'h', name: 'name h' }
      for (const rows of [[row('a')], [row('b'), row('c')], [row('d', { name: undefined })], [row('e'), row('f', { name: undefined })],
        // A later row with its columns in another order, with one more (at the end, in the middle), or with one fewer at the end than the first.
        [row('g'), reordered], [row('i'), row('j', { extra: 1 })], [row('k', { name: undefined }), row('l')],
        [row('m'), row('n', { created_at: undefined })]]) {
        const built = insertRows(suite.db.kysely, 'accounts', rows as never)
        const expected = plain(suite.db.kysely.insertInto('accounts').values(rows as never))
        assert.deepEqual('compile' in built ? plain(built) : filled(built), expected, JSON.stringify(rows))
      }
    })

    test('the filled query runs, and each call gets its own values', async () => {
      const at = '2026-11-24T10:00:00.000Z'
      for (const id of ['acct_t1', 'acct_t2']) {
        const insert = insertRows(suite.db.kysely, 'accounts', [{ id, name: `n-${id}`, created_at: at }])
        await suite.db.kysely.executeQuery('compile' in insert ? insert.compile() : insert)
      }
      const byId = (id: string) => fromTemplate<{ name: string }>(suite.db.kysely, 'account name', [id], ([slot]) => suite.db.kysely.selectFrom('accounts').select('name').where('id', '=', slot!))
      assert.deepEqual((await suite.db.kysely.executeQuery(byId('acct_t1'))).rows, [{ name: 'n-acct_t1' }])
      assert.deepEqual((await suite.db.kysely.executeQuery(byId('acct_t2'))).rows, [{ name: 'n-acct_t2' }])
    })

    test('refuses a template that does not take one of its values as a parameter', () => {
      assert.throws(() => fromTemplate(suite.db.kysely, 'broken', ['x'], () => suite.db.kysely.selectFrom('accounts').select('id').where(sql<boolean>`1 = 1`)), /not a parameter/)
    })

    test('reusableQuery answers each call with its own arguments, in the order the query uses them', async () => {
      const byNameAndId = reusableQuery<{ id: string }, [string, string]>((executor, name, id) =>
        executor.selectFrom('accounts').select('id').where('id', '=', id).where('name', '=', name))
      assert.deepEqual(await byNameAndId(suite.db.kysely, 'a', 'acct_a'), [{ id: 'acct_a' }])
      assert.deepEqual(await byNameAndId(suite.db.kysely, 'b', 'acct_b'), [{ id: 'acct_b' }])
      assert.deepEqual(await byNameAndId(suite.db.kysely, 'a', 'acct_b'), [])
    })

    test('reusableQuery keeps the query\'s own constants, and runs inside a transaction too', async () => {
      const named = reusableQuery<{ id: string }, [string]>((executor, id) =>
        executor.selectFrom('accounts').select('id').where('id', '=', id).where('name', 'in', ['a', 'x']))
      assert.deepEqual(await named(suite.db.kysely, 'acct_a'), [{ id: 'acct_a' }])
      assert.deepEqual(await named(suite.db.kysely, 'acct_b'), [])
      const inTransaction = await suite.db.kysely.transaction().execute((trx) => named(trx, 'acct_a'))
      assert.deepEqual(inTransaction, [{ id: 'acct_a' }])
    })

    test('reusableQuery refuses a query that does not take one of its arguments as a parameter', async () => {
      const broken = reusableQuery<{ id: string }, [string]>((executor) => executor.selectFrom('accounts').select('id').where(sql<boolean>`1 = 1`))
      await assert.rejects(broken(suite.db.kysely, 'acct_a'), /not a parameter/)
    })
  })
}
