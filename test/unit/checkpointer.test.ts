import assert from 'node:assert/strict'
import fs from 'node:fs'
import { afterEach, beforeEach, describe, test } from 'node:test'
import SQLite from 'better-sqlite3'
import type { Kysely } from 'kysely'
import { AUTOCHECKPOINT_PAGES } from '../../src/db/checkpointer.js'
import { openStore, type SqliteTestStore } from '../helpers/stores.js'

/**
 * WAL checkpoints of the embedded store (db/checkpointer.ts): the writer's auto-checkpoint writes what
 * is committed into the database file, and the WAL stays bounded however many commits come in.
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

  /** Rows in a copy of the database file alone, without its WAL. */
  function rowsInFileAlone(): number {
    const copy = `${store.sqlitePath}.copy`
    fs.copyFileSync(store.sqlitePath, copy)
    const alone = new SQLite(copy)
    try {
      return (alone.prepare('select count(*) as n from items').get() as { n: number }).n
    } finally {
      alone.close()
      fs.rmSync(copy)
    }
  }

  test('the writer auto-checkpoints: the WAL is written into the database file', async () => {
    assert.equal(store.db.sqlite!.connection.pragma('wal_autocheckpoint', { simple: true }), AUTOCHECKPOINT_PAGES)
    // One COMMIT each (awaited one by one), each about five WAL pages: past the auto-checkpoint.
    for (let i = 0; i < 300; i++) {
      await kysely.transaction().execute((trx) => trx.insertInto('items').values({ id: `item-${i}`, body: 'x'.repeat(20_000) }).execute())
    }
    // The checkpoint ran inside a COMMIT (synchronously): the rows before it are in the file itself.
    assert.ok(rowsInFileAlone() > 0)
  })

  test('the WAL stays bounded under many commits', async () => {
    const pageSize = store.db.sqlite!.connection.pragma('page_size', { simple: true }) as number
    // Many members per COMMIT, many COMMITs: about 40 MB written in all, ten times the checkpoint size.
    for (let round = 0; round < 40; round++) {
      await Promise.all(Array.from({ length: 50 }, (_, i) =>
        kysely.insertInto('items').values({ id: `item-${round}-${i}`, body: 'x'.repeat(20_000) }).execute()))
    }
    // One batch of slack past the checkpoint size (the COMMIT that crosses it is still appended whole).
    const walPages = fs.statSync(`${store.sqlitePath}-wal`).size / (pageSize + 24)
    assert.ok(walPages < AUTOCHECKPOINT_PAGES + 1000, `the WAL holds ${Math.round(walPages)} pages`)
    const count = await kysely.selectFrom('items').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()
    assert.equal(Number(count.n), 2000)
  })

  test('the WAL stays bounded while reads hold the turn\'s snapshot in every turn', async () => {
    const pageSize = store.db.sqlite!.connection.pragma('page_size', { simple: true }) as number
    // A read in every turn of the loop (db/turn-snapshot.ts): a snapshot that outlived its turn would keep
    // the checkpoint from ever getting past it.
    let reading = true
    let reads = 0
    const readEveryTurn = () => {
      if (!reading) return
      void kysely.selectFrom('items').select('id').limit(1).execute().then(() => { reads++ })
      setImmediate(readEveryTurn)
    }
    readEveryTurn()
    try {
      for (let round = 0; round < 40; round++) {
        await Promise.all(Array.from({ length: 50 }, (_, i) =>
          kysely.insertInto('items').values({ id: `item-${round}-${i}`, body: 'x'.repeat(20_000) }).execute()))
      }
    } finally {
      reading = false
    }
    assert.ok(reads > 40, `${reads} reads`)
    const walPages = fs.statSync(`${store.sqlitePath}-wal`).size / (pageSize + 24)
    assert.ok(walPages < AUTOCHECKPOINT_PAGES + 1000, `the WAL holds ${Math.round(walPages)} pages`)
  })
})
