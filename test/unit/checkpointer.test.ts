import assert from 'node:assert/strict'
import fs from 'node:fs'
import { afterEach, beforeEach, describe, test } from 'node:test'
import SQLite from 'better-sqlite3'
import type { Kysely } from 'kysely'
import { openStore, type SqliteTestStore } from '../helpers/stores.js'

/**
 * WAL checkpoints of the embedded store run off the event loop (db/checkpointer.ts): the writer never
 * checkpoints inside a request's COMMIT, yet what is committed reaches the database file.
 */
describe('WAL checkpoints (SQLite)', () => {
  let store: SqliteTestStore
  let kysely: Kysely<any>

  beforeEach(async () => {
    store = await openStore('sqlite')
    kysely = store.db.kysely as unknown as Kysely<any>
    await kysely.schema.createTable('items').addColumn('id', 'text', (c) => c.primaryKey()).addColumn('body', 'text').execute()
  })

  afterEach(async () => { await store.close() })

  /** Waits until `condition` holds, checking every few milliseconds (the file's test timeout bounds it). */
  async function until(condition: () => boolean): Promise<void> {
    while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10))
  }

  test('the writer does not auto-checkpoint; a background checkpoint writes the WAL into the database file', async () => {
    assert.equal(store.db.sqlite!.connection.pragma('wal_autocheckpoint', { simple: true }), 0)
    const sizeBefore = fs.statSync(store.sqlitePath).size
    // One COMMIT each (awaited one by one): enough commits to start the checkpointer.
    for (let i = 0; i < 300; i++) {
      await kysely.transaction().execute((trx) => trx.insertInto('items').values({ id: `item-${i}`, body: 'x'.repeat(500) }).execute())
    }
    await until(() => fs.statSync(store.sqlitePath).size > sizeBefore)
    // What the file holds without the WAL: a copy of the database file alone has the rows (a copy taken
    // in the middle of a checkpoint may be torn: then it is taken again).
    const copy = `${store.sqlitePath}.copy`
    await until(() => {
      fs.copyFileSync(store.sqlitePath, copy)
      const alone = new SQLite(copy)
      try {
        return (alone.prepare('select count(*) as n from items').get() as { n: number }).n === 300
      } catch {
        return false
      } finally {
        alone.close()
      }
    })
  })
})
