import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, test } from 'node:test'
import type { Kysely } from 'kysely'
import { type Database, openDatabase } from '../../src/db/database.js'
import { createGroupCommit } from '../../src/db/group-commit.js'
import { QueryInsideTransactionError } from '../../src/db/transaction-guard.js'

/**
 * The SQLite store's guard (db/transaction-guard.ts), on a real SQLite file: a query through the
 * database from inside one of its transactions used to wait forever for the connection the transaction
 * holds; it now throws at once. Nothing here waits on a timer: a hang would fail the file's timeout.
 */
describe('SQLite: a query through the database inside its own transaction', () => {
  let dir: string
  let db: Database
  let kysely: Kysely<any>

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-guard-'))
    db = openDatabase({ sqlitePath: path.join(dir, 'test.db') })
    kysely = db.kysely as unknown as Kysely<any>
    await kysely.schema.createTable('items').addColumn('id', 'text', (c) => c.primaryKey()).execute()
  })

  afterEach(async () => {
    await db.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  const ids = async (from: Kysely<any> = kysely) => (await from.selectFrom('items').select('id').orderBy('id').execute()).map((r) => r.id)

  test('throws a clear error instead of hanging, and the transaction rolls back', async () => {
    await assert.rejects(
      kysely.transaction().execute(async (trx) => {
        await trx.insertInto('items').values({ id: 'in-transaction' }).execute()
        await kysely.selectFrom('items').selectAll().execute()
      }),
      (error: unknown) => error instanceof QueryInsideTransactionError && /inside a transaction on the same SQLite database/.test(error.message),
    )
    assert.deepEqual(await ids(), [], 'the transaction that made the mistake rolled back')
  })

  test('also deep in the work: after awaits, in Promise.all, in a nested transaction, in group commit', async () => {
    const group = createGroupCommit({ kysely: db.kysely, sqlite: db.sqlite! })
    const inside = [
      async () => { await Promise.resolve(); await new Promise((resolve) => setImmediate(resolve)); await kysely.selectFrom('items').selectAll().execute() },
      () => Promise.all([kysely.selectFrom('items').selectAll().execute()]),
      () => kysely.transaction().execute(async (inner) => inner.selectFrom('items').selectAll().execute()),
      () => group.submit(() => 1),
    ]
    for (const mistake of inside) {
      await assert.rejects(kysely.transaction().execute(async (trx) => {
        await trx.insertInto('items').values({ id: 'x' }).execute()
        await mistake()
      }), QueryInsideTransactionError)
    }
    assert.deepEqual(await ids(), [])
  })

  test('normal transactions and their own queries work; commit and rollback as before', async () => {
    const seen = await kysely.transaction().execute(async (trx) => {
      await trx.insertInto('items').values([{ id: 'a' }, { id: 'b' }]).execute()
      return ids(trx)
    })
    assert.deepEqual(seen, ['a', 'b'])
    await assert.rejects(kysely.transaction().execute(async (trx) => {
      await trx.insertInto('items').values({ id: 'c' }).execute()
      throw new Error('changed my mind')
    }), /changed my mind/)
    assert.deepEqual(await ids(), ['a', 'b'])
  })

  test('concurrent, non-nested queries and transactions wait their turn and succeed', async () => {
    let release!: () => void
    let started!: () => void
    const begun = new Promise<void>((resolve) => { started = resolve })
    const open = kysely.transaction().execute(async (trx) => {
      await trx.insertInto('items').values({ id: 'first' }).execute()
      started()
      await new Promise<void>((resolve) => { release = resolve })
    })
    await begun
    // Started outside the transaction while it holds the connection: they wait for it, not throw.
    const outside = Promise.all([
      ids(),
      kysely.transaction().execute(async (trx) => { await trx.insertInto('items').values({ id: 'second' }).execute() }),
      kysely.insertInto('items').values({ id: 'third' }).execute(),
    ])
    release()
    await open
    const [read] = await outside
    // The read ran right after the transaction released the connection, before the batch's COMMIT:
    // it sees only what is durable (db/sqlite-driver.ts), and the transaction's caller had not been
    // answered yet.
    assert.deepEqual(read, [], 'the read waited for the transaction and saw nothing not yet committed')
    assert.deepEqual(await ids(), ['first', 'second', 'third'])
  })

  test('work a transaction leaves behind may query once the transaction has ended', async () => {
    let later!: Promise<string[]>
    await kysely.transaction().execute(async (trx) => {
      await trx.insertInto('items').values({ id: 'done' }).execute()
      // Not awaited by the transaction: it runs after the commit and must not be refused.
      later = new Promise<void>((resolve) => setImmediate(resolve)).then(() => new Promise((resolve) => setImmediate(resolve))).then(() => ids())
    })
    assert.deepEqual(await later, ['done'])
  })

  test('a transaction on another SQLite database is no obstacle', async () => {
    const other = openDatabase({ sqlitePath: path.join(dir, 'other.db') })
    try {
      await kysely.transaction().execute(async (trx) => {
        await trx.insertInto('items').values({ id: 'here' }).execute()
        await other.ping()
      })
      assert.deepEqual(await ids(), ['here'])
    } finally {
      await other.close()
    }
  })
})
