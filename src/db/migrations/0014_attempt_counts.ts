import { type Kysely, sql } from 'kysely'

/**
 * `meta.total` of an endpoint's delivery list from counters, as 0012 and 0013 did for payments and
 * events: an endpoint that takes every event has about as many attempts as its account has events, and
 * counting them was most of a list answer at scale. A recorded attempt inserts a change (+1 an account
 * and endpoint), retention a change of -n for what it deletes; the periodic fold (jobs/count-fold.ts)
 * moves them into `attempt_counts`. No foreign key on the changes, for 0012's reasons.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('attempt_counts')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('n', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('attempt_counts_pk', ['account_id', 'endpoint_id'])
    .execute()
  await db.schema.createTable('attempt_count_changes')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('n', 'integer', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('attempt_count_changes_account_idx').on('attempt_count_changes')
    .columns(['account_id', 'endpoint_id'])
    .execute()
  await sql`insert into attempt_counts (account_id, endpoint_id, n)
    select account_id, endpoint_id, count(*) from webhook_attempts group by account_id, endpoint_id`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('attempt_count_changes').execute()
  await db.schema.dropTable('attempt_counts').execute()
}
