import { type Kysely, PostgresAdapter, sql } from 'kysely'

/**
 * PostgreSQL: the retention indexes of events and delivery attempts hold `created_at || ''` rather than
 * `created_at`. A b-tree on the column itself could also return rows newest first, and PostgreSQL chose it
 * for a list's first page (`where account_id = $1 order by created_at desc, id desc limit 11`) whenever
 * one account held most of the rows: it then walked every newer row of the other accounts and filtered
 * them out (100,000 rows, 15-20 ms a page, in the thirteenth pass of issue 17; docs/performance.md). No
 * list orders by the expression, so the lists keep their (account, created_at, id) indexes, and retention,
 * which searches by the same expression (db/counters.ts `oldestRows`), keeps a range scan that stops at
 * once when nothing is old enough. (A BRIN index cannot order rows either, but once retention deletes and
 * new rows reuse the pages, every block range matches an old date and the search reads the whole table.)
 * SQLite's planner takes the list's index (the tests in pagination-cursors.test.ts hold both stores):
 * nothing changes there.
 */
const INDEXES = [
  { name: 'events_created_idx', table: 'events' },
  { name: 'webhook_attempts_created_idx', table: 'webhook_attempts' },
] as const

const onPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

export async function up(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return
  for (const index of INDEXES) {
    await db.schema.dropIndex(index.name).execute()
    await db.schema.createIndex(index.name).on(index.table).expression(sql`(${sql.ref('created_at')} || '')`).execute()
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return
  for (const index of INDEXES) {
    await db.schema.dropIndex(index.name).execute()
    await db.schema.createIndex(index.name).on(index.table).column('created_at').execute()
  }
}
