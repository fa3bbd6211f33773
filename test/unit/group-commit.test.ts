import assert from 'node:assert/strict'
import path from 'node:path'
import { afterEach, beforeEach, describe, test } from 'node:test'
import SQLite from 'better-sqlite3'
import type { Kysely } from 'kysely'
import { type Database, openDatabase } from '../../src/db/database.js'
import { createGroupCommit, type GroupCommit } from '../../src/db/group-commit.js'
import { openStore, type SqliteTestStore } from '../helpers/stores.js'

/** Group commit on the embedded store (db/group-commit.ts), against a real SQLite file. */
describe('group commit', () => {
  let store: SqliteTestStore
  let db: Database
  let group: GroupCommit
  let kysely: Kysely<any>
  /** A second connection to the same file: it sees only what is committed. */
  let reader: SQLite.Database

  beforeEach(async () => {
    // A new, unmigrated SQLite file of its own.
    store = await openStore('sqlite')
    const file = store.sqlitePath
    db = store.db
    kysely = db.kysely as unknown as Kysely<any>
    await kysely.schema.createTable('items').addColumn('id', 'text', (c) => c.primaryKey()).execute()
    group = createGroupCommit({ kysely: db.kysely, sqlite: db.sqlite! })
    reader = new SQLite(file, { readonly: true })
  })

  afterEach(async () => {
    reader.close()
    await store.close()
  })

  const committed = () => (reader.prepare('select id from items order by id').all() as Array<{ id: string }>).map((r) => r.id)
  const insert = (id: string) => kysely.insertInto('items').values({ id })

  test('work submitted in one turn commits as one transaction, before any caller hears back', async () => {
    const seenByOthers: string[][] = []
    const all = Array.from({ length: 10 }, (_, i) => group.submit((exec) => {
      exec.run(insert(`item-${i}`))
      seenByOthers.push(committed())
      return i
    }))
    assert.deepEqual(await Promise.all(all), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert.deepEqual(seenByOthers, Array.from({ length: 10 }, () => []), 'nothing was visible to another connection until the one COMMIT')
    assert.equal(committed().length, 10)
  })

  test('work that declines or fails before it writes fails alone; the rest of its group commits', async () => {
    const answers = await Promise.allSettled([
      group.submit((exec) => { exec.run(insert('kept-1')); return 'ok' }),
      group.submit((exec) => { exec.all(kysely.selectFrom('items').select('id')); return undefined }),
      // An update that matches no row wrote nothing: the piece may still decline.
      group.submit((exec) => { exec.run(kysely.updateTable('items').set({ id: 'x' }).where('id', '=', 'absent')); return undefined }),
      group.submit(() => { throw new Error('boom') }),
      // The failed statement is undone by SQLite alone; nothing was written before it.
      group.submit((exec) => { exec.run(insert('kept-1')); return 'duplicate' }),
      group.submit((exec) => { exec.run(insert('kept-2')); return exec.all(kysely.selectFrom('items').select('id').orderBy('id')).map((r) => r.id) }),
    ])
    assert.deepEqual(answers.map((a) => a.status), ['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'rejected', 'fulfilled'])
    assert.equal((answers[1] as PromiseFulfilledResult<unknown>).value, undefined)
    assert.equal((answers[2] as PromiseFulfilledResult<unknown>).value, undefined)
    assert.match(String((answers[4] as PromiseRejectedResult).reason), /UNIQUE/)
    assert.deepEqual((answers[5] as PromiseFulfilledResult<unknown>).value, ['kept-1', 'kept-2'], 'later work sees earlier work of its group')
    assert.deepEqual(committed(), ['kept-1', 'kept-2'])
  })

  test('work that fails or declines after it wrote fails its whole batch; the work after it commits in the next', async () => {
    const boom = new Error('boom after a write')
    const answers = await Promise.allSettled([
      group.submit((exec) => { exec.run(insert('a')); return 'a' }),
      group.submit((exec) => { exec.run(insert('b')); throw boom }),
      group.submit((exec) => { exec.run(insert('c')); return 'c' }),
      group.submit((exec) => { exec.run(insert('d')); return undefined }),
      // A statement through `all` that may write counts as a write, whatever it returned.
      group.submit((exec) => { exec.run(insert('e')); return 'e' }),
      group.submit((exec) => { exec.all(kysely.insertInto('items').values({ id: 'f' }).returning('id')); return undefined }),
      group.submit((exec) => { exec.run(insert('g')); return 'g' }),
    ])
    assert.deepEqual(answers.map((a) => a.status), ['rejected', 'rejected', 'rejected', 'rejected', 'rejected', 'rejected', 'fulfilled'])
    assert.equal((answers[0] as PromiseRejectedResult).reason, boom, 'the batch\'s earlier member hears why it failed')
    assert.equal((answers[1] as PromiseRejectedResult).reason, boom)
    assert.match(String((answers[3] as PromiseRejectedResult).reason), /declined after it had written/)
    assert.equal((answers[2] as PromiseRejectedResult).reason, (answers[3] as PromiseRejectedResult).reason)
    assert.match(String((answers[5] as PromiseRejectedResult).reason), /declined after it had written/)
    assert.deepEqual(committed(), ['g'], 'nothing of the failed batches was committed')
  })

  test('a group runs a few pieces a turn of the event loop, takes in work queued meanwhile, and still commits once', async () => {
    const batch = db.sqlite!.batch
    const commitsBefore = batch.commits
    const turnsSeen: boolean[] = []
    const seenByOthers: string[][] = []
    let turned = false
    let late: Promise<unknown> | undefined
    const piece = (id: string) => (exec: Parameters<Parameters<GroupCommit['submit']>[0]>[0]) => {
      exec.run(insert(id))
      turnsSeen.push(turned)
      seenByOthers.push(committed())
      return id
    }
    const ids = Array.from({ length: 12 }, (_, i) => `item-${String(i).padStart(2, '0')}`)
    const early = ids.map((id) => group.submit(piece(id)))
    // The next turn of the loop: it comes while the group is running, between two of its chunks.
    setImmediate(() => {
      turned = true
      late = group.submit(piece('late'))
    })
    assert.deepEqual(await Promise.all(early), ids)
    assert.equal(await late, 'late')
    assert.equal(turnsSeen[0], false, 'the first chunk ran in the turn the group started')
    assert.equal(turnsSeen.at(-2), true, 'a later chunk ran after the event loop turned')
    assert.equal(batch.commits - commitsBefore, 1, 'the chunks and the work queued between them share one COMMIT')
    assert.deepEqual(seenByOthers, Array.from({ length: 13 }, () => []), 'nothing was visible before that COMMIT')
    assert.equal(committed().length, 13)
  })

  test('an error that ends the transaction fails the whole group; the next group works', async () => {
    const answers = await Promise.allSettled([
      group.submit((exec) => { exec.run(insert('a')); return 1 }),
      group.submit(() => {
        db.sqlite!.connection.exec('ROLLBACK')
        throw new Error('the transaction is gone')
      }),
      group.submit((exec) => { exec.run(insert('c')); return 3 }),
    ])
    assert.deepEqual(answers.map((a) => a.status), ['rejected', 'rejected', 'rejected'])
    assert.deepEqual(committed(), [])
    assert.equal(await group.submit((exec) => { exec.run(insert('d')); return 'd' }), 'd')
    assert.deepEqual(committed(), ['d'])
  })

  test('waits for a Kysely transaction in progress instead of joining it', async () => {
    let release!: () => void
    const open = kysely.transaction().execute(async (trx) => {
      await trx.insertInto('items').values({ id: 'from-transaction' }).execute()
      await new Promise<void>((resolve) => { release = resolve })
    })
    await new Promise((resolve) => setTimeout(resolve, 10))
    const grouped = group.submit((exec) => exec.all(kysely.selectFrom('items').select('id')).map((r) => r.id))
    await new Promise((resolve) => setTimeout(resolve, 20))
    assert.deepEqual(committed(), [], 'the transaction has not committed yet')
    release()
    await open
    assert.deepEqual(await grouped, ['from-transaction'], 'the group ran after that transaction, on its own')
  })

  test('once the database is closed, submitted work is refused rather than left waiting', async () => {
    const closed = openDatabase({ sqlitePath: path.join(path.dirname(store.sqlitePath), 'closed.db') })
    const closedGroup = createGroupCommit({ kysely: closed.kysely, sqlite: closed.sqlite! })
    await closed.close()
    await assert.rejects(closedGroup.submit(() => 1))
  })
})
