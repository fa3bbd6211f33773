import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { CompiledQuery, sql } from 'kysely'
import { openDatabase } from '../../src/db/database.js'
import { openStore } from '../helpers/stores.js'

/**
 * Closing a PostgreSQL Database ends its pool (src/db/database.ts, openPostgres). Kysely ends the pool
 * only once it has used it, and the pool comes as a promise (postgres-pool.ts, loaded on PostgreSQL only),
 * so a pool that only the statement batches used is ended by close() itself; every close() waits for it.
 */

const pgUrl = process.env.TEST_DATABASE_URL

/** Whether PostgreSQL still has a backend with this pid; its connection's end reaches it a moment later. */
async function backendGone(db: ReturnType<typeof openDatabase>, pid: number): Promise<boolean> {
  // pg-pool closes an idle connection after 10 s by itself: a pool that close() did not end lasts longer than this.
  for (let tries = 0; tries < 100; tries++) {
    const { rows } = await sql<{ n: number }>`select count(*) as n from pg_stat_activity where pid = ${pid}`.execute(db.kysely)
    if (Number(rows[0]!.n) === 0) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return false
}

describe('closing a PostgreSQL database (postgres)', { skip: !pgUrl && 'PostgreSQL only (TEST_DATABASE_URL not set)' }, () => {
  test('a pool only the statement batches used is ended, and a second close() waits for it too', async () => {
    const store = await openStore('postgres')
    const db = openDatabase({ databaseUrl: pgUrl!, postgresSchema: store.postgres.schema, poolSize: 1, preparedStatements: false })
    try {
      const [answer] = await db.postgres!.runTogether([CompiledQuery.raw('select pg_backend_pid() as pid')])
      const pid = Number((answer!.rows[0] as { pid: number }).pid)
      assert.ok(pid > 0)
      assert.equal(db.poolStats().total, 1)
      const first = db.close()
      await db.close()
      assert.equal(db.poolStats().total, 0, 'the second close() returned while the pool still held its connection')
      await first
      assert.ok(await backendGone(store.db, pid), 'the connection is still open on the server')
    } finally {
      // The same promise as above when the test got that far (close() is once per database).
      await db.close()
      await store.close()
    }
  })

  test('close() of a database that never ran a query resolves (its pool, never connected, is ended)', async () => {
    const store = await openStore('postgres')
    try {
      const db = openDatabase({ databaseUrl: pgUrl!, postgresSchema: store.postgres.schema })
      await db.close()
      assert.deepEqual(db.poolStats(), { total: 0, idle: 0, waiting: 0 })
    } finally {
      await store.close()
    }
  })
})
