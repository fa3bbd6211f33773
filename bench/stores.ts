import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { type Database, openDatabase } from '../src/db/database.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { randomBase62 } from '../src/lib/ids.js'

/** A fresh store for one benchmark run: a temporary SQLite file, or a new PostgreSQL schema. */
export interface BenchStore {
  name: 'sqlite' | 'postgres'
  db: Database
  /** Environment pointing a Wishpay process at this store. */
  env: Record<string, string>
  sqlitePath?: string
  postgres?: { url: string, schema: string }
  drop(): Promise<void>
}

async function admin(url: string, text: string) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(text)
  } finally {
    await client.end()
  }
}

export async function openBenchStore(kind: 'sqlite' | 'postgres', postgresUrl?: string): Promise<BenchStore> {
  if (kind === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-bench-db-'))
    const sqlitePath = path.join(dir, 'wishpay.db')
    const db = openDatabase({ sqlitePath })
    await migrateToLatest(db)
    return {
      name: 'sqlite', db, env: { DATA_DIR: dir }, sqlitePath,
      drop: async () => { await db.close(); fs.rmSync(dir, { recursive: true, force: true }) },
    }
  }
  const schema = `wishpay_bench_${randomBase62(8).toLowerCase()}`
  await admin(postgresUrl!, `create schema "${schema}"`)
  // Bulk seeding takes longer than the serving query timeout allows.
  const db = openDatabase({ databaseUrl: postgresUrl!, postgresSchema: schema, queryTimeoutMs: 0 })
  await migrateToLatest(db)
  const withSchema = new URL(postgresUrl!)
  withSchema.searchParams.set('options', `-c search_path=${schema}`)
  return {
    name: 'postgres', db, env: { DATABASE_URL: withSchema.toString() }, postgres: { url: postgresUrl!, schema },
    drop: async () => { await db.close(); await admin(postgresUrl!, `drop schema if exists "${schema}" cascade`) },
  }
}
