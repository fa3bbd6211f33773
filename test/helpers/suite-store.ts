import { after, before } from 'node:test'
import type { Database } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import type { StoreKind, TestStore } from './stores.js'

/**
 * A migrated store of `kind` for the tests of one `describe`: opened (and `seed` run) before them, closed
 * after them. Its `db` is there once the suite's tests run.
 */
export function migratedStoreForSuite(kind: StoreKind, seed?: (db: Database) => Promise<void>): { readonly db: Database } {
  let store: TestStore | undefined
  before(async () => {
    store = await kind.open()
    await migrateToLatest(store.db)
    await seed?.(store.db)
  })
  after(async () => { await store?.close() })
  return { get db() { return store!.db } }
}
