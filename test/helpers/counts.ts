import { sql } from 'kysely'
import type { Counter } from '../../src/db/counters.js'
import type { Database } from '../../src/db/database.js'

/**
 * What an account's counter holds, by key, zeros left out: its folded counts plus its changes not folded
 * yet. Where a write put its count (a change row on PostgreSQL, the counts at once on SQLite,
 * db/counters.ts recordChanges) does not matter to a reader, so two writes compare by this.
 */
export async function recordedCounts(db: Database, counter: Counter, accountId: string): Promise<Record<string, number>> {
  const by: Record<string, number> = {}
  for (const table of [counter.counts, counter.changes]) {
    const rows = await sql<{ key: string, n: number | string }>`select ${sql.ref(counter.key)} as key, n from ${sql.table(table)}
      where account_id = ${accountId}`.execute(db.kysely)
    for (const row of rows.rows) by[row.key] = (by[row.key] ?? 0) + Number(row.n)
  }
  return Object.fromEntries(Object.entries(by).filter(([, n]) => n !== 0).sort(([x], [y]) => x.localeCompare(y)))
}
