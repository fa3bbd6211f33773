import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { type Database, openDatabase } from '../../src/db/database.js'
import { randomBase62 } from '../../src/lib/ids.js'

/**
 * The one store abstraction of the tests and the benchmarks: SQLite always, PostgreSQL when a URL is
 * given (TEST_DATABASE_URL for the tests). Each opened store is new (a temporary SQLite file, or a
 * PostgreSQL schema of its own) and is removed on close, so runs never collide and leave nothing behind.
 *
 * In-process tests use `db` at once (test/helpers/app.ts). Process tests hand `env` to `wishpay`
 * processes, which create and migrate the store, and read it through `db` afterwards: the connection
 * is opened on first use, so a test that SIGKILLs a server opens it only after the crash.
 */
export type StoreName = 'sqlite' | 'postgres'

interface StoreBase {
  /** Environment that points a child process (CLI, server) at this same store. */
  readonly env: Record<string, string>
  /** This process's connection to the store, opened on first use and closed by close(). */
  readonly db: Database
  /** Closes `db` (when it was opened) and removes the store. */
  close(): Promise<void>
}

export interface SqliteTestStore extends StoreBase {
  readonly name: 'sqlite'
  /** The database file, for code that connects without `db` (bench/floors.ts). */
  readonly sqlitePath: string
}

export interface PostgresTestStore extends StoreBase {
  readonly name: 'postgres'
  /** The server's URL (without the schema) and the store's schema, for code that connects without `db`. */
  readonly postgres: { url: string, schema: string }
}

export type TestStore = SqliteTestStore | PostgresTestStore

export interface OpenStoreOptions {
  /** The PostgreSQL server a postgres store is made on; default TEST_DATABASE_URL. */
  postgresUrl?: string | undefined
  /** PostgreSQL: the bound on each query of `db` (0: none, for bulk seeding in bench/). */
  queryTimeoutMs?: number
}

export interface StoreKind {
  name: StoreName
  open(): Promise<TestStore>
}

/** `db` opened by `open` on first use; `closeDb` closes it only if it was opened. */
function lazyDatabase(open: () => Database): { get(): Database, closeDb(): Promise<void> } {
  let db: Database | undefined
  return {
    get: () => (db ??= open()),
    closeDb: async () => { await db?.close() },
  }
}

function openSqliteStore(): SqliteTestStore {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-test-'))
  const sqlitePath = path.join(dir, 'wishpay.db')
  const db = lazyDatabase(() => openDatabase({ sqlitePath }))
  return {
    name: 'sqlite',
    env: { DATA_DIR: dir },
    get db() { return db.get() },
    sqlitePath,
    async close() {
      await db.closeDb()
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
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

async function openPostgresStore(url: string, options: OpenStoreOptions): Promise<PostgresTestStore> {
  const schema = `wishpay_test_${randomBase62(10).toLowerCase()}`
  // Child processes select the schema through the connection's search_path. Parsed before the schema is
  // made, so that a URL node cannot parse leaves no empty schema behind.
  const withSchema = new URL(url)
  withSchema.searchParams.set('options', `-c search_path=${schema}`)
  await adminQuery(url, `create schema "${schema}"`)
  const db = lazyDatabase(() => openDatabase({
    databaseUrl: url,
    postgresSchema: schema,
    ...(options.queryTimeoutMs !== undefined ? { queryTimeoutMs: options.queryTimeoutMs } : {}),
  }))
  return {
    name: 'postgres',
    env: { DATABASE_URL: withSchema.toString() },
    get db() { return db.get() },
    postgres: { url, schema },
    async close() {
      await db.closeDb()
      await adminQuery(url, `drop schema if exists "${schema}" cascade`)
    },
  }
}

/** A new store of this kind; a postgres store needs `postgresUrl` or TEST_DATABASE_URL. */
export async function openStore(name: 'sqlite', options?: OpenStoreOptions): Promise<SqliteTestStore>
export async function openStore(name: 'postgres', options?: OpenStoreOptions): Promise<PostgresTestStore>
export async function openStore(name: StoreName, options?: OpenStoreOptions): Promise<TestStore>
export async function openStore(name: StoreName, options: OpenStoreOptions = {}): Promise<TestStore> {
  if (name === 'sqlite') return openSqliteStore()
  const url = options.postgresUrl ?? process.env.TEST_DATABASE_URL
  if (!url) throw new Error('a postgres store needs a URL (TEST_DATABASE_URL)')
  return openPostgresStore(url, options)
}

/** The stores every API test runs on: SQLite always, PostgreSQL when TEST_DATABASE_URL is set. */
export function storeKinds(): StoreKind[] {
  const kinds: StoreKind[] = [{ name: 'sqlite', open: () => openStore('sqlite') }]
  if (process.env.TEST_DATABASE_URL) kinds.push({ name: 'postgres', open: () => openStore('postgres') })
  return kinds
}

