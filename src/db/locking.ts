import type { SelectQueryBuilder } from 'kysely'
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
