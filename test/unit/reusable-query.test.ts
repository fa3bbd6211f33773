import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import type { Database } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { reusableQuery } from '../../src/db/reusable-query.js'
import { storeKinds, type TestStore } from '../helpers/stores.js'

/** reusableQuery (src/db/reusable-query.ts): compiled once, run with each call's own arguments, on both stores. */
for (const kind of storeKinds()) {
  describe(`reusableQuery (${kind.name})`, () => {
    let store: TestStore
    let db: Database
    before(async () => {
      store = await kind.open()
      db = store.db
      await migrateToLatest(db)
      await db.kysely.insertInto('accounts').values([
        { id: 'acct_a', name: 'a', created_at: '2026-11-24T12:00:00.000Z' },
        { id: 'acct_b', name: 'b', created_at: '2026-11-24T12:00:01.000Z' },
      ]).execute()
    })
    after(async () => { await store.close() })

    test('answers each call with its own arguments, in the order the query uses them', async () => {
      const byNameAndId = reusableQuery<{ id: string }, [string, string]>(2, (executor, name, id) =>
        executor.selectFrom('accounts').select('id').where('id', '=', id).where('name', '=', name))
      assert.deepEqual(await byNameAndId(db.kysely, 'a', 'acct_a'), [{ id: 'acct_a' }])
      assert.deepEqual(await byNameAndId(db.kysely, 'b', 'acct_b'), [{ id: 'acct_b' }])
      assert.deepEqual(await byNameAndId(db.kysely, 'a', 'acct_b'), [])
    })

    test('keeps the query\'s own constants, and runs inside a transaction too', async () => {
      const named = reusableQuery<{ id: string }, [string]>(1, (executor, id) =>
        executor.selectFrom('accounts').select('id').where('id', '=', id).where('name', 'in', ['a', 'x']))
      assert.deepEqual(await named(db.kysely, 'acct_a'), [{ id: 'acct_a' }])
      assert.deepEqual(await named(db.kysely, 'acct_b'), [])
      const inTransaction = await db.kysely.transaction().execute((trx) => named(trx, 'acct_a'))
      assert.deepEqual(inTransaction, [{ id: 'acct_a' }])
    })

    test('refuses a query that does not take one of its arguments as a parameter', async () => {
      const broken = reusableQuery<{ id: string }, [string]>(1, (executor) => executor.selectFrom('accounts').select('id').where(sql<boolean>`1 = 1`))
      await assert.rejects(broken(db.kysely, 'acct_a'), /not a parameter/)
    })
  })
}
