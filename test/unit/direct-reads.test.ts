import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import SQLite from 'better-sqlite3'
import { type Database, type Executor, openDatabase } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { reusableQuery } from '../../src/db/reusable-query.js'
import { QueryInsideTransactionError } from '../../src/db/transaction-guard.js'
import { migratedStoreForSuite } from '../helpers/suite-store.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Direct reads (src/db/sqlite-driver.ts, src/db/reusable-query.ts): on the SQLite store, reusableQuery's
 * reads through the database itself run on the reader connection at once, without the writer's lock and
 * without Kysely's executor, and still see only what is committed. Transactions, `:memory:`, statements
 * that write and PostgreSQL keep Kysely's path. Nothing here waits on a timer: a read that queued for
 * the lock would never settle while the test holds it, and is seen unsettled after a turn of the loop.
 */

const CREATED = '2026-11-24T12:00:00.000Z'

const accountById = reusableQuery<{ id: string, name: string }, [string]>((db, id) => db.selectFrom('accounts').selectAll().where('id', '=', id))
const renameAccount = reusableQuery<{ id: string, name: string }, [string, string]>((db, id, name) =>
  db.updateTable('accounts').set({ name }).where('id', '=', id).returning(['id', 'name']))

/** What Kysely's own path answers for the same read. */
const throughKysely = (db: Executor, id: string) => db.selectFrom('accounts').selectAll().where('id', '=', id).execute()

const nextTurn = () => new Promise<void>((resolve) => { setImmediate(resolve) })

/** Whether `promise` settled within a turn of the event loop. */
async function settlesAtOnce(promise: Promise<unknown>): Promise<boolean> {
  let settled = false
  promise.then(() => { settled = true }, () => { settled = true })
  await nextTurn()
  return settled
}

/** A gate the test opens: `wait` resolves once `open` was called. */
function gate(): { wait: Promise<void>, open(): void } {
  let open!: () => void
  const wait = new Promise<void>((resolve) => { open = resolve })
  return { wait, open }
}

async function addAccount(db: Executor, id: string): Promise<void> {
  await db.insertInto('accounts').values({ id, name: `name ${id}`, created_at: CREATED }).execute()
}

/** Runs `check` while a transaction has inserted account `id` and not yet committed; then lets it commit. */
async function whileUncommitted(db: Database, id: string, check: () => Promise<void>): Promise<void> {
  const inserted = gate()
  const finish = gate()
  const transaction = db.kysely.transaction().execute(async (trx) => {
    await addAccount(trx, id)
    inserted.open()
    await finish.wait
  })
  await inserted.wait
  try {
    await check()
  } finally {
    finish.open()
    await transaction
  }
}

for (const kind of storeKinds()) {
  describe(`reusableQuery reads (${kind.name})`, () => {
    const suite = migratedStoreForSuite(kind, (db) => addAccount(db.kysely, 'acct_a'))

    test('answers what Kysely answers, row for row (same objects\' shape)', async () => {
      const direct = await accountById(suite.db.kysely, 'acct_a')
      assert.deepEqual(direct, await throughKysely(suite.db.kysely, 'acct_a'))
      assert.equal(direct.length, 1)
      assert.deepEqual(Object.keys(direct[0]!), Object.keys((await throughKysely(suite.db.kysely, 'acct_a'))[0]!))
      assert.deepEqual(await accountById(suite.db.kysely, 'acct_none'), [])
    })

    test('inside a transaction, the transaction\'s reads run on it and see its own uncommitted writes', async () => {
      const seen = await suite.db.kysely.transaction().execute(async (trx) => {
        await addAccount(trx, 'acct_trx')
        return accountById(trx, 'acct_trx')
      })
      assert.deepEqual(seen.map((r) => r.id), ['acct_trx'])
      assert.deepEqual((await accountById(suite.db.kysely, 'acct_trx')).map((r) => r.id), ['acct_trx'], 'committed')
      await assert.rejects(suite.db.kysely.transaction().execute(async (trx) => {
        await addAccount(trx, 'acct_rolled_back')
        assert.equal((await accountById(trx, 'acct_rolled_back')).length, 1)
        throw new Error('changed my mind')
      }), /changed my mind/)
      assert.deepEqual(await accountById(suite.db.kysely, 'acct_rolled_back'), [])
    })

    test('a statement that writes still goes through Kysely (and is committed)', async () => {
      assert.deepEqual(await renameAccount(suite.db.kysely, 'acct_a', 'renamed'), [{ id: 'acct_a', name: 'renamed' }])
      assert.equal((await accountById(suite.db.kysely, 'acct_a'))[0]!.name, 'renamed')
      assert.deepEqual(await renameAccount(suite.db.kysely, 'acct_a', 'name acct_a'), [{ id: 'acct_a', name: 'name acct_a' }])
    })

    if (kind.name === 'sqlite') {
      test('answers while another holder has the connection lock; Kysely\'s own reads still wait for it', async () => {
        const { lock } = suite.db.sqlite!.batch
        await lock.lock()
        let queued: Promise<unknown> | undefined
        try {
          const read = accountById(suite.db.kysely, 'acct_a')
          assert.ok(await settlesAtOnce(read), 'the direct read should not wait for the lock')
          assert.deepEqual((await read).map((r) => r.id), ['acct_a'])
          queued = throughKysely(suite.db.kysely, 'acct_a')
          assert.equal(await settlesAtOnce(queued), false, 'a read through Kysely waits its turn')
          const write = renameAccount(suite.db.kysely, 'acct_a', 'while locked')
          assert.equal(await settlesAtOnce(write), false, 'a write through reusableQuery waits its turn')
          queued = Promise.all([queued, write])
        } finally {
          lock.unlock()
        }
        await queued
        assert.equal((await accountById(suite.db.kysely, 'acct_a'))[0]!.name, 'while locked')
        await renameAccount(suite.db.kysely, 'acct_a', 'name acct_a')
      })

      test('sees only what is committed: not a transaction\'s write before its COMMIT', async () => {
        await whileUncommitted(suite.db, 'acct_pending', async () => {
          // The transaction holds the lock; this read is not inside it.
          const during = accountById(suite.db.kysely, 'acct_pending')
          assert.ok(await settlesAtOnce(during), 'the read should not wait for the transaction')
          assert.deepEqual(await during, [], 'an uncommitted write is not visible')
        })
        assert.deepEqual((await accountById(suite.db.kysely, 'acct_pending')).map((r) => r.id), ['acct_pending'], 'visible once durable')
      })

      test('sees only what is committed: not a released batch member before the batch\'s COMMIT', async () => {
        const { batch } = suite.db.sqlite!
        const released = gate()
        const finish = gate()
        const holder = batch.exclusive(async () => {
          const member = batch.begin()
          suite.db.sqlite!.prepare('insert into accounts (id, name, created_at) values (?, ?, ?)').run('acct_member', 'member', CREATED)
          batch.release(member)
          released.open()
          await finish.wait
          batch.commit()
        })
        await released.wait
        try {
          assert.ok(batch.openBatch, 'the batch is still open')
          const during = accountById(suite.db.kysely, 'acct_member')
          assert.ok(await settlesAtOnce(during), 'the read should not wait for the batch')
          assert.deepEqual(await during, [], 'a released member is not visible before COMMIT')
        } finally {
          finish.open()
          await holder
        }
        assert.deepEqual((await accountById(suite.db.kysely, 'acct_member')).map((r) => r.id), ['acct_member'])
      })

      test('the reads of a turn share a snapshot, and a COMMIT in the same turn ends it: a read after the COMMIT sees it', async () => {
        const { batch } = suite.db.sqlite!
        const answers = await batch.exclusive(() => {
          // All in one turn, synchronously: each direct read runs when it is called.
          const before = accountById(suite.db.kysely, 'acct_same_turn')
          const member = batch.begin()
          suite.db.sqlite!.prepare('insert into accounts (id, name, created_at) values (?, ?, ?)').run('acct_same_turn', 'same turn', CREATED)
          batch.release(member)
          const released = accountById(suite.db.kysely, 'acct_same_turn')
          batch.commit()
          const after = accountById(suite.db.kysely, 'acct_same_turn')
          return Promise.all([before, released, after])
        })
        assert.deepEqual(answers.map((rows) => rows.map((r) => r.id)), [[], [], ['acct_same_turn']])
      })

      test('a COMMIT by another connection (a CLI command) is seen from the next turn on', async () => {
        const other = new SQLite((suite.db.sqlite!.connection as { name: string }).name)
        try {
          const before = accountById(suite.db.kysely, 'acct_other_process')
          other.prepare('insert into accounts (id, name, created_at) values (?, ?, ?)').run('acct_other_process', 'other', CREATED)
          const sameTurn = accountById(suite.db.kysely, 'acct_other_process')
          assert.deepEqual([await before, await sameTurn], [[], []], 'the turn\'s snapshot was taken before the insert')
          await nextTurn()
          assert.deepEqual((await accountById(suite.db.kysely, 'acct_other_process')).map((r) => r.id), ['acct_other_process'])
        } finally {
          other.close()
        }
      })

      test('from inside a transaction, a read through the database itself is refused as before', async () => {
        await assert.rejects(
          suite.db.kysely.transaction().execute(async (trx) => {
            await addAccount(trx, 'acct_mistake')
            await accountById(suite.db.kysely, 'acct_a')
          }),
          QueryInsideTransactionError,
        )
        assert.deepEqual(await accountById(suite.db.kysely, 'acct_mistake'), [], 'the transaction rolled back')
        // Deeper in the work too, after turns of the loop and in Promise.all.
        await assert.rejects(suite.db.kysely.transaction().execute(async () => {
          await nextTurn()
          await Promise.all([accountById(suite.db.kysely, 'acct_a')])
        }), QueryInsideTransactionError)
        // Outside it again, reads work.
        assert.equal((await accountById(suite.db.kysely, 'acct_a')).length, 1)
      })
    }

    if (kind.name === 'postgres') {
      test('a read while another connection holds an uncommitted write: same answers as Kysely\'s', async () => {
        await whileUncommitted(suite.db, 'acct_pg_pending', async () => {
          assert.deepEqual(await accountById(suite.db.kysely, 'acct_pg_pending'), await throughKysely(suite.db.kysely, 'acct_pg_pending'))
          assert.deepEqual(await accountById(suite.db.kysely, 'acct_pg_pending'), [])
        })
        const rows = await accountById(suite.db.kysely, 'acct_pg_pending')
        assert.deepEqual(rows, await throughKysely(suite.db.kysely, 'acct_pg_pending'))
        assert.deepEqual(rows.map((r) => r.id), ['acct_pg_pending'])
      })
    }
  })
}

describe('reusableQuery reads (SQLite :memory:, no reader connection)', () => {
  let db: Database
  before(async () => {
    db = openDatabase({ sqlitePath: ':memory:' })
    await migrateToLatest(db)
    await addAccount(db.kysely, 'acct_m')
  })
  after(async () => { await db.close() })

  test('reads work and go through Kysely: they wait for the lock, on the writer', async () => {
    assert.deepEqual(await accountById(db.kysely, 'acct_m'), await throughKysely(db.kysely, 'acct_m'))
    const { lock } = db.sqlite!.batch
    await lock.lock()
    let read: Promise<Array<{ id: string }>>
    try {
      read = accountById(db.kysely, 'acct_m')
      assert.equal(await settlesAtOnce(read), false, 'no reader: the read takes its turn on the one connection')
    } finally {
      lock.unlock()
    }
    assert.deepEqual((await read).map((r) => r.id), ['acct_m'])
  })

  test('transactions see their own writes, and a read through the database inside one is refused', async () => {
    const seen = await db.kysely.transaction().execute(async (trx) => {
      await addAccount(trx, 'acct_m2')
      return accountById(trx, 'acct_m2')
    })
    assert.deepEqual(seen.map((r) => r.id), ['acct_m2'])
    await assert.rejects(db.kysely.transaction().execute(async () => accountById(db.kysely, 'acct_m')), QueryInsideTransactionError)
  })
})

describe('reusableQuery reads on a closed SQLite store', () => {
  test('are refused, as Kysely\'s are', async () => {
    const [kind] = storeKinds()
    const store = await kind!.open()
    try {
      await migrateToLatest(store.db)
      assert.deepEqual(await accountById(store.db.kysely, 'acct_x'), [])
      const { db } = store
      await db.close()
      await assert.rejects(throughKysely(db.kysely, 'acct_x'), /closed|destroyed/)
      await assert.rejects(accountById(db.kysely, 'acct_x'), /closed|destroyed/)
    } finally {
      await store.close()
    }
  })
})
