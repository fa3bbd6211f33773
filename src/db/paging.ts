import { type SelectQueryBuilder, sql } from 'kysely'
import type { Position, Window } from '../lib/paging.js'

/**
 * A list query restricted to one page's window (lib/paging.ts): newest first (`created_at` desc, then
 * `id` desc, the order of every list), `take` rows after `skip`. A cursor is a seek, not an offset:
 * `(created_at, id) < (c, i)` (after) or `> (c, i)` (before, read oldest first), a row-value comparison
 * that SQLite and PostgreSQL both turn into a range of the list's index `(…, created_at desc, id desc)`,
 * so the page starts at the cursor whatever its depth; ties in `created_at` are broken by `id`, as the
 * order is. The query must read one table (no joins), which holds `created_at` and `id`.
 */
export function inWindow<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>, window: Window): SelectQueryBuilder<DB, TB, O> {
  const seek = window.seek
  let windowed = query
  if (seek !== undefined) windowed = windowed.where(seekPredicate(seek.direction, seek.from))
  const direction = seek?.direction === 'before' ? 'asc' : 'desc'
  windowed = windowed.orderBy(sql.ref('created_at'), direction).orderBy(sql.ref('id'), direction).limit(window.take)
  return window.skip > 0 ? windowed.offset(window.skip) : windowed
}

function seekPredicate(direction: 'after' | 'before', from: Position) {
  const operator = direction === 'after' ? sql.raw('<') : sql.raw('>')
  return sql<boolean>`(${sql.ref('created_at')}, ${sql.ref('id')}) ${operator} (${from.created_at}, ${from.id})`
}
