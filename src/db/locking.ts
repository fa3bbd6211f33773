import { type RawBuilder, type SelectQueryBuilder, sql } from 'kysely'
import type { DialectName } from './database.js'

/**
 * Locks the selected rows until the transaction ends. PostgreSQL needs FOR UPDATE; SQLite has no
 * row locks and needs none: a write transaction there holds the whole database.
 */
export function lockForUpdate<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  dialect: DialectName,
): SelectQueryBuilder<DB, TB, O> {
  return dialect === 'postgres' ? query.forUpdate() : query
}

/**
 * Whether work under a key must be claimed in the database. PostgreSQL serves any number of
 * processes, so it must; SQLite serves one process, whose own in-flight set already rules out a
 * second worker on the key (and a write transaction there holds the whole database anyway).
 */
export function claimsAcrossProcesses(db: { dialect: DialectName }): boolean {
  return db.dialect === 'postgres'
}

/**
 * A transaction-scoped advisory lock on `name`, taken without waiting (PostgreSQL): true when taken,
 * false when another transaction holds it. Released at commit or rollback.
 */
export function tryAdvisoryXactLock(name: string): RawBuilder<boolean> {
  return sql<boolean>`pg_try_advisory_xact_lock(hashtextextended(${name}, 0))`
}
