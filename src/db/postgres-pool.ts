import pg from 'pg'
import { PreparingClient } from './prepared-statements.js'

/**
 * node-pg's pool as Wishpay opens it. database.ts imports this module only when it opens PostgreSQL, so a
 * server on the embedded SQLite store never loads node-pg (about 1.4 MB of heap; docs/performance.md,
 * thirty-eighth pass).
 */

/** Opening a connection: an unreachable server must cost a request well under 2 s. */
const CONNECT_TIMEOUT_MS = 1500
/** Waiting for a free pooled connection under load: long, since overload is not an outage. */
const POOL_WAIT_TIMEOUT_MS = 10_000

/**
 * pg-pool uses one option, connectionTimeoutMillis, both to open a connection and to wait for a free
 * one. Each client gets the short connect timeout through this subclass; the pool keeps the long wait.
 */
class QuickConnectClient extends PreparingClient {
  constructor(config?: pg.ClientConfig) {
    super({ ...config, connectionTimeoutMillis: CONNECT_TIMEOUT_MS })
  }
}

// COUNT(*) and bigint columns arrive as strings from pg; every integer we store fits in 2^53.
const INT8_OID = 20
const pgTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
}

export interface PostgresPoolOptions {
  url: string
  poolSize: number
  /** Named prepared statements (prepared-statements.ts). */
  preparedStatements: boolean
  /** The client-side bound on every query (database.ts, DatabaseOptions.queryTimeoutMs); 0 turns it off. */
  queryTimeoutMs: number
  /** The schema to work in (tests give each run its own). */
  schema: string | undefined
}

export function createPostgresPool(options: PostgresPoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize,
    types: pgTypes,
    // An unreachable server fails each request fast (503); an unresponsive one within the query timeout.
    Client: QuickConnectClient,
    // pg-pool hands its options to each client it makes (PreparingClient reads this one).
    ...{ prepareStatements: options.preparedStatements },
    connectionTimeoutMillis: POOL_WAIT_TIMEOUT_MS,
    ...(options.queryTimeoutMs !== 0 ? { query_timeout: options.queryTimeoutMs } : {}),
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  })
  // A client that loses its server emits 'error', idle in the pool or checked out between queries;
  // without a listener the process would crash. The failed query itself reports the error to its caller.
  pool.on('error', () => {})
  pool.on('connect', (client) => { client.on('error', () => {}) })
  return pool
}
