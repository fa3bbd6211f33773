import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { type Database, openDatabase } from '../../src/db/database.js'
import { randomBase62 } from '../../src/lib/ids.js'

/**
 * The stores every API test runs on: SQLite always, PostgreSQL when TEST_DATABASE_URL is set.
 * Each opened store is new (a temporary SQLite file, or a PostgreSQL schema of its own) and is
 * removed on close, so runs never collide and leave nothing behind.
 */
export interface TestStore {
  readonly name: 'sqlite' | 'postgres'
  /** Environment that points a child process (CLI, server) at this same store. */
  readonly env: Record<string, string>
  readonly db: Database
  close(): Promise<void>
}

export interface StoreKind {
  name: 'sqlite' | 'postgres'
  open(): Promise<TestStore>
}

async function openSqliteStore(): Promise<TestStore> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-test-'))
  const db = openDatabase({ sqlitePath: path.join(dir, 'wishpay.db') })
  return {
    name: 'sqlite',
    env: { DATA_DIR: dir },
    db,
    async close() {
      await db.close()
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A URL that selects a schema through the connection's search_path, for child processes. */
function urlWithSchema(url: string, schema: string): string {
  const parsed = new URL(url)
  parsed.searchParams.set('options', `-c search_path=${schema}`)
  return parsed.toString()
}

async function adminQuery(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(text)
  } finally {
    await client.end()
  }
}

/** A new, empty PostgreSQL schema; the store's db works only in it. */
export async function createPostgresSchema(url: string): Promise<{ schema: string, url: string, drop(): Promise<void> }> {
  const schema = `wishpay_test_${randomBase62(10).toLowerCase()}`
  await adminQuery(url, `create schema "${schema}"`)
  return {
    schema,
    url: urlWithSchema(url, schema),
    drop: () => adminQuery(url, `drop schema if exists "${schema}" cascade`),
  }
}

async function openPostgresStore(url: string): Promise<TestStore> {
  const created = await createPostgresSchema(url)
  const db = openDatabase({ databaseUrl: url, postgresSchema: created.schema })
  return {
    name: 'postgres',
    env: { DATABASE_URL: created.url },
    db,
    async close() {
      await db.close()
      await created.drop()
    },
  }
}

export function storeKinds(): StoreKind[] {
  const kinds: StoreKind[] = [{ name: 'sqlite', open: openSqliteStore }]
  const url = process.env.TEST_DATABASE_URL
  if (url) kinds.push({ name: 'postgres', open: () => openPostgresStore(url) })
  return kinds
}
