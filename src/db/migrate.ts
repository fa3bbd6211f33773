import { Migrator } from 'kysely'
import type { Database } from './database.js'
import { migrations } from './migrations/index.js'

/**
 * Brings the schema to the latest migration. On PostgreSQL Kysely's migrator holds an advisory
 * lock inside one transaction, so any number of processes may start at once: one migrates, the
 * others wait and then find nothing to do.
 */
export async function migrateToLatest(db: Database): Promise<string[]> {
  const migrator = new Migrator({
    db: db.kysely,
    provider: { getMigrations: async () => migrations },
  })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error instanceof Error ? error : new Error(String(error))
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}
