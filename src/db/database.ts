import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import type SQLite from 'better-sqlite3'
import { type CompiledQuery, Kysely, sql, type Transaction } from 'kysely'
import { OwnSchemaPostgresDialect } from './own-schema-introspector.js'
import type pg from 'pg'
import type { DatabaseSchema } from './schema.js'
import { configureCheckpoints } from './checkpointer.js'
import { runTogether } from './pg-script.js'
import { ConnectionLock, DurableBatch } from './durable-batch.js'
import { allowDirectReads, BatchingSqliteDialect, BatchingSqliteDriver } from './sqlite-driver.js'
import { SharedCommits } from './shared-commits.js'
import { guardedSqliteKysely } from './transaction-guard.js'
import { TurnSnapshot } from './turn-snapshot.js'

export type DialectName = 'sqlite' | 'postgres'

/** A query runner: the database itself or an open transaction. Repositories take this. */
export type Executor = Kysely<DatabaseSchema> | Transaction<DatabaseSchema>

/** An open transaction, for code outside repositories that passes one along. */
export type Trx = Transaction<DatabaseSchema>

export interface PoolStats {
  /** Connections open, idle among them, and queries waiting for one. */
  total: number
  idle: number
  waiting: number
}

/** A connection and its prepared statements. */
export interface StatementCache {
  readonly connection: SQLite.Database
  /** A prepared statement from the connection's cache. */
  prepare(text: string): SQLite.Statement
}

/** The embedded store's connection, for work that must run synchronously (db/group-commit.ts). */
export interface SqliteHandle extends StatementCache {
  /** The one write path: every write is a member of its batches (db/durable-batch.ts). */
  readonly batch: DurableBatch
}

/** The PostgreSQL pool, for what Kysely cannot express (db/statement-batch.ts). */
export interface PostgresHandle {
  /**
   * Runs the queries in one implicit transaction, all or none, in one round trip, each as a prepared
   * statement (pg-script.ts). Resolves with each query's rows, in order.
   */
  runTogether(queries: readonly CompiledQuery[]): Promise<Array<{ rows: unknown[] }>>
  /**
   * False when prepared statements are off (DATABASE_PREPARED_STATEMENTS=false): runTogether then runs
   * the queries unnamed with their parameters, one round trip each, in one transaction.
   */
  readonly prepares: boolean
  /** Where statement batches report the transactions they commit (the Database's sharedCommits). */
  readonly sharedCommits: SharedCommits
}

export interface Database {
  readonly kysely: Kysely<DatabaseSchema>
  readonly dialect: DialectName
  /**
   * True for the embedded SQLite store: one process at a time serves it, so anything a process leaves
   * behind (a job's lease) is from one that is gone. PostgreSQL serves any number of processes.
   */
  readonly singleProcess: boolean
  /** Set for the SQLite store only. */
  readonly sqlite?: SqliteHandle
  /** Set for PostgreSQL only. */
  readonly postgres?: PostgresHandle
  /** Each commit that several writes shared, as it happens (db/shared-commits.ts; /metrics listens). */
  readonly sharedCommits: SharedCommits
  poolStats(): PoolStats
  /** Throws when the database does not answer. */
  ping(): Promise<void>
  close(): Promise<void>
}

export interface DatabaseOptions {
  /** postgres:// URL; when absent the embedded SQLite store at sqlitePath is used. */
  databaseUrl?: string | undefined
  sqlitePath?: string
  /** PostgreSQL schema to work in (tests give each run its own). */
  postgresSchema?: string
  poolSize?: number
  /** PostgreSQL: named prepared statements (prepared-statements.ts); default true. */
  preparedStatements?: boolean
  /**
   * Client-side bound on every PostgreSQL query, so that an unresponsive server costs a request a quick
   * 503 rather than a hang. 0 turns it off (migrations, which may wait on another process's lock).
   */
  queryTimeoutMs?: number
}

/** Serving queries are tiny; anything slower than this means the database is not answering. */
export const SERVING_QUERY_TIMEOUT_MS = 5000
export function openDatabase(options: DatabaseOptions): Database {
  if (options.databaseUrl) return openPostgres(options.databaseUrl, options)
  if (!options.sqlitePath) throw new Error('openDatabase needs databaseUrl or sqlitePath')
  return openSqlite(options.sqlitePath)
}

/**
 * Kysely's SQLite driver prepares every query anew, which was a sixth of a simple request's CPU. The
 * statements of an application are few, so they are prepared once and kept (bounded, in case of a
 * query built with a varying shape).
 */
function withStatementCache(connection: SQLite.Database, limit = 500): StatementCache {
  const statements = new Map<string, SQLite.Statement>()
  return {
    connection,
    prepare(text: string) {
      let statement = statements.get(text)
      if (!statement) {
        if (statements.size >= limit) statements.clear()
        statement = connection.prepare(text)
        statements.set(text, statement)
      }
      return statement
    },
  }
}

/** Members of one durable batch at most: bounds how long its first member waits for the COMMIT. */
const MAX_BATCH = 64

/**
 * The writer's page cache. It keeps what the writes walk between transactions: the tables' and indexes'
 * tails (ids are ULIDs, so inserts append; an index that leads with the account has a tail for each
 * account writing), their interior pages and the mandates. A random idempotency key lands on a leaf of
 * its index that no cache this size would hold in a large store, so it is read from the OS page cache
 * either way. better-sqlite3's default of 16 MB filled under load; 8 MB saved
 * 8-9 MB of peak RSS (seventh pass), and going to 2 MB saved 3-8 MB more with a million payments in the
 * store, a write's CPU within ±5 % (docs/performance.md, thirty-fifth pass).
 */
const WRITER_CACHE_KIB = 2048

const requireCommonJs = createRequire(import.meta.url)

/**
 * better-sqlite3, loaded when a SQLite store is opened, so that a PostgreSQL server never loads it
 * (docs/performance.md, fortieth pass: its JavaScript, about 0.1 MB of heap; its native library is only
 * mapped by the first connection anyway). It is CommonJS, so `require` loads it synchronously and
 * openDatabase stays synchronous; lint refuses a value import of it elsewhere.
 */
function loadSqlite(): typeof SQLite {
  return requireCommonJs('better-sqlite3') as typeof SQLite
}

function openSqlite(file: string): Database {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true })
  const connection = new (loadSqlite())(file)
  connection.pragma('journal_mode = WAL')
  connection.pragma('synchronous = FULL')
  connection.pragma('foreign_keys = ON')
  // Another process (the CLI, a second server) may hold the write lock briefly.
  connection.pragma('busy_timeout = 5000')
  // Each member of a durable batch runs in a savepoint, whose undo pages SQLite keeps in a statement
  // journal: on file (the default) that is two pwrite() calls a page once a payment's ~20 pages pass
  // its 64 KiB spill size. In memory they are a memcpy; only this connection's writes use it (the
  // reader's sorts of large lists stay on file).
  connection.pragma('temp_store = MEMORY')
  connection.pragma(`cache_size = -${WRITER_CACHE_KIB}`)
  const writer = withStatementCache(connection)
  // Reads outside a write see only what is committed (sqlite-driver.ts); WAL lets this connection read
  // the last committed snapshot while the writer's batch is open. `:memory:` cannot be opened twice.
  const reader = file === ':memory:' ? undefined : withStatementCache(openReader(file))
  // `:memory:` has no WAL.
  if (file !== ':memory:') configureCheckpoints(connection)
  // The reads of a turn share one read transaction, which each COMMIT ends first (turn-snapshot.ts).
  const snapshotReader = reader && { ...reader, snapshot: new TurnSnapshot(reader.connection) }
  const sharedCommits = new SharedCommits()
  const batch = new DurableBatch(connection, new ConnectionLock(), MAX_BATCH, () => snapshotReader?.snapshot.end(), sharedCommits)
  const sqlite: SqliteHandle = { ...writer, batch }
  const driver = new BatchingSqliteDriver(writer, snapshotReader, batch)
  // A query through `kysely` from inside one of its transactions throws rather than hangs (transaction-guard.ts).
  const kysely = guardedSqliteKysely<DatabaseSchema>(new BatchingSqliteDialect(driver), connection)
  // reusableQuery's reads through `kysely` itself skip the lock and Kysely's executor (sqlite-driver.ts).
  allowDirectReads(kysely, driver)
  return {
    kysely,
    dialect: 'sqlite',
    singleProcess: true,
    sqlite,
    sharedCommits,
    // One connection for writes, shared by turns.
    poolStats: () => ({ total: 1, idle: 1, waiting: 0 }),
    ping: async () => { await sql`select 1`.execute(kysely) },
    async close() {
      await kysely.destroy()
      // Kysely destroys the driver only if a query ever ran.
      await driver.destroy()
    },
  }
}

/**
 * The reader's page cache: SQLite empties it whenever another connection committed (a WAL reader keeps
 * no page across snapshots), so under writes it holds one query's pages; better-sqlite3's default of
 * 16 MB would only fill in read-only stretches, as RSS.
 */
const READER_CACHE_KIB = 2048

function openReader(file: string): SQLite.Database {
  const reader = new (loadSqlite())(file, { readonly: true, fileMustExist: true })
  reader.pragma('busy_timeout = 5000')
  reader.pragma(`cache_size = -${READER_CACHE_KIB}`)
  return reader
}

function openPostgres(url: string, options: DatabaseOptions): Database {
  // node-pg is loaded with the pool, on PostgreSQL only (postgres-pool.ts). Kysely takes the pool as a
  // promise; the statement batches and the pool's statistics wait for the same one.
  let pool: pg.Pool | undefined
  const opened = import('./postgres-pool.js').then(({ createPostgresPool }) => pool = createPostgresPool({
    url,
    poolSize: options.poolSize ?? 10,
    preparedStatements: options.preparedStatements !== false,
    queryTimeoutMs: options.queryTimeoutMs ?? SERVING_QUERY_TIMEOUT_MS,
    schema: options.postgresSchema,
  }))
  const kysely = new Kysely<DatabaseSchema>({ dialect: new OwnSchemaPostgresDialect({ pool: () => opened }) })
  const sharedCommits = new SharedCommits()
  let closing: Promise<void> | undefined
  return {
    kysely,
    dialect: 'postgres',
    singleProcess: false,
    postgres: {
      runTogether: (queries) => pool ? runTogether(pool, queries) : opened.then((opening) => runTogether(opening, queries)),
      prepares: options.preparedStatements !== false,
      sharedCommits,
    },
    sharedCommits,
    poolStats: () => ({ total: pool?.totalCount ?? 0, idle: pool?.idleCount ?? 0, waiting: pool?.waitingCount ?? 0 }),
    ping: async () => { await sql`select 1`.execute(kysely) },
    // Kysely ends the pool once it has used it; a pool only the statement batches used is ended here.
    // One promise for every caller, so that none returns before the pool has ended.
    close: () => closing ??= (async () => {
      await kysely.destroy()
      const opening = await opened
      if (!opening.ending) await opening.end()
    })(),
  }
}

/** The store the configuration selects: PostgreSQL for a postgres:// DATABASE_URL, else SQLite in DATA_DIR. */
export function openConfiguredDatabase(
  config: { databaseUrl: string | undefined, dataDir: string, databasePreparedStatements?: boolean },
  options: Pick<DatabaseOptions, 'queryTimeoutMs' | 'poolSize'> = {},
): Database {
  return openDatabase({
    databaseUrl: config.databaseUrl,
    sqlitePath: path.join(config.dataDir, 'wishpay.db'),
    ...(config.databasePreparedStatements === false ? { preparedStatements: false } : {}),
    ...options,
  })
}
