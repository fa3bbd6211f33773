import { PostgresAdapter, type RawBuilder, type SelectQueryBuilder, sql } from 'kysely'
import type { Database, DialectName, Executor, SqliteHandle } from './database.js'

/**
 * The dialect an executor (the database or one of its transactions) speaks, learnt from Kysely's
 * adapter, so that repositories and services never pass a dialect around (rule 7: dialect differences
 * live in db/ only).
 */
export function dialectOf(db: Executor): DialectName {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite'
}

/**
 * Locks the selected rows until the transaction ends. PostgreSQL needs FOR UPDATE; SQLite has no
 * row locks and needs none: a write transaction there holds the whole database.
 */
export function forUpdate<DB, TB extends keyof DB, O>(db: Executor, query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O> {
  return dialectOf(db) === 'postgres' ? query.forUpdate() : query
}

/**
 * Locks the selected rows, passing over rows another transaction holds (FOR UPDATE SKIP LOCKED on
 * PostgreSQL), so that processes claiming at once take different rows. SQLite serves one writer at a
 * time and needs neither.
 */
export function forUpdateSkipLocked<DB, TB extends keyof DB, O>(db: Executor, query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O> {
  return dialectOf(db) === 'postgres' ? query.forUpdate().skipLocked() : query
}

/**
 * Builds what differs by store once, at start-up: the SQLite variant gets the embedded database's
 * handle (for a group commit), the PostgreSQL one nothing more than the Database it already has.
 */
export function byStore<T>(db: Pick<Database, 'sqlite'>, variants: { postgres: () => T, sqlite: (sqlite: SqliteHandle) => T }): T {
  return db.sqlite ? variants.sqlite(db.sqlite) : variants.postgres()
}

/** A whole row of `table` as one JSON value, for a one-round-trip read (PostgreSQL only). */
export function rowToJson<T>(table: string): RawBuilder<T> {
  return sql<T>`row_to_json(${sql.table(table)})`
}

/**
 * A column that a row found by its primary key is only checked against, never found by: `column || ''`
 * is an expression no index serves, so PostgreSQL finds the row by its key whatever its statistics say.
 * Given `account_id = … and id = …`, a generic plan made while a table was small used an index led by
 * account_id as readily as the key, and, kept as the table grew, walked every row of the account for
 * each lookup (docs/performance.md, twenty-first and twenty-second passes). PostgreSQL has no index hints.
 */
export function checkedOnly(column: string): RawBuilder<string> {
  return sql<string>`${sql.ref(column)} || ''`
}
