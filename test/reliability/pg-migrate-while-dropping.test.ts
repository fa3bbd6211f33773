import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { migrateToLatest } from '../../src/db/migrate.js'
import { openStore, type TestStore } from '../helpers/stores.js'

/**
 * Many Wishpay schemas share one PostgreSQL database in the tests (and may on a shared server). A
 * migration must not fail because another schema is dropped while it runs: Kysely's own introspector
 * resolved every schema by name and failed with "schema ... does not exist" (db/own-schema-introspector.ts).
 */
describe('PostgreSQL: migrating while other schemas are dropped', { skip: !process.env.TEST_DATABASE_URL }, () => {
  test('every migration succeeds while other migrated schemas are dropped around it', async () => {
    const rounds = 6
    for (let round = 0; round < rounds; round++) {
      // Migrated schemas to drop, and fresh ones to migrate at the same time.
      const doomed = await Promise.all(Array.from({ length: 4 }, () => openStore('postgres')))
      await Promise.all(doomed.map((store) => migrateToLatest(store.db)))
      const fresh: TestStore[] = await Promise.all(Array.from({ length: 4 }, () => openStore('postgres')))
      try {
        const results = await Promise.allSettled([
          ...fresh.map((store) => migrateToLatest(store.db)),
          ...doomed.map((store) => store.close()),
        ])
        const failures = results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))
        assert.deepEqual(failures, [])
        for (const store of fresh) assert.ok((await store.db.kysely.selectFrom('payments').select('id').execute()).length === 0)
      } finally {
        await Promise.all(fresh.map((store) => store.close()))
      }
    }
  })
})
