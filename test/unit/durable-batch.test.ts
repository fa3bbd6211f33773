import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, test } from 'node:test'
import SQLite from 'better-sqlite3'
import type { Kysely } from 'kysely'
import type { Database } from '../../src/db/database.js'
import { createGroupCommit } from '../../src/db/group-commit.js'
import { openStore, type SqliteTestStore } from '../helpers/stores.js'

/**
 * Every write on the embedded store is a member of a durable batch (db/durable-batch.ts): Kysely
 * transactions, statements outside them and group-commit pieces share one COMMIT, and nobody is answered
 * before it. Counted through the batch's own COMMIT counter, checked from a second connection to the file.
 */
describe('durable batch (SQLite)', () => {
  let store: SqliteTestStore
  let db: Database
  let kysely: Kysely<any>
  /** A second connection to the same file: it sees only what is committed. */
  let other: SQLite.Database

  beforeEach(async () => {
    store = await openStore('sqlite')
    db = store.db
    kysely = db.kysely as unknown as Kysely<any>
    await kysely.schema.createTable('items').addColumn('id', 'text', (c) => c.primaryKey()).execute()
    other = new SQLite(store.sqlitePath, { readonly: true })
  })

  afterEach(async () => {
    other.close()
    await store.close()
  })

  const committed = () => (other.prepare('select id from items order by id').all() as Array<{ id: string }>).map((r) => r.id)
  const commits = () => db.sqlite!.batch.commits
  /** A transaction that inserts `id` and answers what another connection sees once it resolves. */
  const insertInTransaction = async (id: string) => {
    await kysely.transaction().execute(async (trx) => {
      await trx.insertInto('items').values({ id }).execute()
    })
    return committed().includes(id)
  }

  test('concurrent transactions share COMMITs, and each resolves only once its row is durable', async () => {
    const before = commits()
    const ids = Array.from({ length: 40 }, (_, i) => `t-${String(i).padStart(2, '0')}`)
    const reported: number[] = []
    const stop = db.sharedCommits.listen((writes) => reported.push(writes))
    const visibleOnResolve = await Promise.all(ids.map(insertInTransaction)).finally(stop)
    assert.deepEqual(visibleOnResolve, ids.map(() => true), 'every caller resolved after the COMMIT that holds its row')
    const used = commits() - before
    assert.ok(used >= 1 && used < ids.length, `${ids.length} transactions took ${used} COMMITs`)
    assert.deepEqual(committed(), ids)
    // Each COMMIT reported once (db/shared-commits.ts), with the transactions it made durable.
    assert.equal(reported.length, used)
    assert.equal(reported.reduce((sum, n) => sum + n, 0), ids.length)
  })

  test('a member that throws rolls back alone; the rest of its batch commits', async () => {
    const answers = await Promise.allSettled([
      insertInTransaction('kept-1'),
      kysely.transaction().execute(async (trx) => {
        await trx.insertInto('items').values({ id: 'undone' }).execute()
        throw new Error('changed my mind')
      }),
      kysely.transaction().execute(async (trx) => {
        await trx.insertInto('items').values({ id: 'undone-2' }).execute()
        await trx.insertInto('items').values({ id: 'kept-1' }).execute()
      }),
      insertInTransaction('kept-2'),
    ])
    assert.deepEqual(answers.map((a) => a.status), ['fulfilled', 'rejected', 'rejected', 'fulfilled'])
    assert.match(String((answers[1] as PromiseRejectedResult).reason), /changed my mind/)
    assert.match(String((answers[2] as PromiseRejectedResult).reason), /UNIQUE/)
    assert.deepEqual(committed(), ['kept-1', 'kept-2'])
  })

  test('a member that rewrites more pages than the statement journal spills at rolls back alone, from memory', async () => {
    // The writer keeps savepoint undo pages in memory (db/database.ts): no temp file, no pwrite() a page.
    assert.equal(db.sqlite!.connection.pragma('temp_store', { simple: true }), 2)
    await kysely.schema.createTable('docs').addColumn('id', 'integer', (c) => c.primaryKey()).addColumn('body', 'text').execute()
    // About 100 pages of committed rows: rewriting them all puts some 400 KiB in the undo log, past
    // SQLite's 64 KiB statement-journal spill size.
    await kysely.transaction().execute(async (trx) => {
      for (let id = 0; id < 100; id++) await trx.insertInto('docs').values({ id, body: `${id}`.padEnd(3000, '.') }).execute()
    })
    const answers = await Promise.allSettled([
      kysely.transaction().execute(async (trx) => {
        await trx.updateTable('docs').set({ body: 'rewritten' }).execute()
        await trx.deleteFrom('docs').where('id', '<', 50).execute()
        throw new Error('changed my mind')
      }),
      insertInTransaction('kept'),
    ])
    assert.deepEqual(answers.map((a) => a.status), ['rejected', 'fulfilled'])
    const docs = other.prepare('select id, body from docs order by id').all() as Array<{ id: number, body: string }>
    assert.deepEqual(docs, Array.from({ length: 100 }, (_, id) => ({ id, body: `${id}`.padEnd(3000, '.') })))
    assert.deepEqual(committed(), ['kept'])
  })

  test('an error that ends the transaction rejects every member of the batch; the next batch works', async () => {
    const answers = await Promise.allSettled([
      insertInTransaction('a'),
      kysely.insertInto('items').values({ id: 'b' }).execute(),
      kysely.transaction().execute(async (trx) => {
        await trx.insertInto('items').values({ id: 'c' }).execute()
        // What SQLite does by itself on some errors (a full disk): the whole transaction is gone.
        db.sqlite!.connection.exec('ROLLBACK')
        await trx.insertInto('items').values({ id: 'd' }).execute()
      }),
    ])
    assert.deepEqual(answers.map((a) => a.status), ['rejected', 'rejected', 'rejected'], 'none was answered, none is durable')
    assert.deepEqual(committed(), [])
    assert.equal(await insertInTransaction('after'), true)
    assert.deepEqual(committed(), ['after'])
  })

  test('a write outside a transaction is answered once durable; a read outside one sees only what is committed', async () => {
    let release!: () => void
    let started!: () => void
    const begun = new Promise<void>((resolve) => { started = resolve })
    const open = kysely.transaction().execute(async (trx) => {
      await trx.insertInto('items').values({ id: 'pending' }).execute()
      started()
      await new Promise<void>((resolve) => { release = resolve })
    })
    await begun
    const write = kysely.insertInto('items').values({ id: 'autocommit' }).execute().then(() => committed())
    const read = kysely.selectFrom('items').select('id').orderBy('id').execute()
    release()
    await open
    assert.deepEqual((await read).map((r) => r.id), [], 'the read ran before the COMMIT and saw none of it')
    assert.deepEqual(await write, ['autocommit', 'pending'], 'the write resolved after its COMMIT')
  })

  test('group-commit pieces and Kysely transactions join the same batch', async () => {
    const group = createGroupCommit({ kysely: db.kysely, sqlite: db.sqlite! })
    const before = commits()
    const results = await Promise.all([
      ...Array.from({ length: 10 }, (_, i) => group.submit((exec) => { exec.run(kysely.insertInto('items').values({ id: `g-${i}` })); return committed().length })),
      ...Array.from({ length: 10 }, (_, i) => insertInTransaction(`k-${i}`)),
    ])
    assert.deepEqual(results.slice(0, 10), Array.from({ length: 10 }, () => 0), 'a piece runs before any COMMIT of its batch')
    assert.deepEqual(results.slice(10), Array.from({ length: 10 }, () => true))
    assert.equal(committed().length, 20)
    assert.ok(commits() - before < 20, `20 writes took ${commits() - before} COMMITs`)
  })

  test('closing commits what is open and then refuses work', async () => {
    const pending = insertInTransaction('last')
    await store.db.close()
    assert.equal(await pending, true)
    await assert.rejects(kysely.selectFrom('items').selectAll().execute())
  })
})
