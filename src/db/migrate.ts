import { Migrator, sql } from 'kysely'
import type { Database } from './database.js'
import { migrations } from './migrations/index.js'

/**
 * The PostgreSQL schema the connection works in. Kysely looks for its migration tables across all
 * schemas unless told which one, so two Wishpay schemas in one database would confuse it.
 */
async function currentSchema(db: Database): Promise<string | undefined> {
  if (db.dialect !== 'postgres') return undefined
  const result = await sql<{ schema: string }>`select current_schema() as schema`.execute(db.kysely)
  return result.rows[0]?.schema
}

/** Kysely's migrator over the registry, its bookkeeping tables in the connection's own schema. */
export async function createMigrator(db: Database): Promise<Migrator> {
  const schema = await currentSchema(db)
  return new Migrator({
    db: db.kysely,
    provider: { getMigrations: async () => migrations },
    ...(schema ? { migrationTableSchema: schema } : {}),
  })
}

/**
 * Brings the schema to the latest migration. On PostgreSQL Kysely's migrator holds an advisory
 * lock inside one transaction, so any number of processes may start at once: one migrates, the
 * others wait and then find nothing to do.
 */
export async function migrateToLatest(db: Database): Promise<string[]> {
  const migrator = await createMigrator(db)
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error instanceof Error ? error : new Error(String(error))
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}
