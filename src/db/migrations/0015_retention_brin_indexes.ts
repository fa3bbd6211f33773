import { type Kysely, PostgresAdapter } from 'kysely'

/**
 * PostgreSQL: the retention indexes on `created_at` of events and delivery attempts become BRIN indexes.
 * As b-trees they could also return rows newest first, and PostgreSQL chose them for a list's first page
 * (`where account_id = $1 order by created_at desc, id desc limit 11`) whenever one account held most
 * of the rows: it then walked every newer row of the other accounts and filtered them out (100,000 rows,
 * 20 ms a page, in the thirteenth pass of issue 17; docs/performance.md). A BRIN index cannot order rows,
 * so the lists keep their (account, created_at, id) indexes, and retention, which deletes the oldest rows
 * of an append-only table, still finds them without a scan. SQLite has no BRIN and its planner takes the
 * list's index (the test in pagination-cursors.test.ts holds both): nothing changes there.
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
    await db.schema.createIndex(index.name).on(index.table).using('brin').column('created_at').execute()
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return
  for (const index of INDEXES) {
    await db.schema.dropIndex(index.name).execute()
    await db.schema.createIndex(index.name).on(index.table).column('created_at').execute()
  }
}
