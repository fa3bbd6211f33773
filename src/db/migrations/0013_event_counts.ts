import { type Kysely, sql } from 'kysely'

/**
 * `meta.total` of an event list from counters, as 0012 did for payments: events grow fastest (every
 * write makes one or more), and counting an account's events was most of a list answer at scale. A
 * write inserts a change (+n an account and type), event retention a change of -n for what it deletes;
 * the periodic fold (jobs/count-fold.ts) moves them into `event_counts`. No foreign key on the changes,
 * for 0012's reasons.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('event_counts')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('n', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('event_counts_pk', ['account_id', 'type'])
    .execute()
  await db.schema.createTable('event_count_changes')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('n', 'integer', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('event_count_changes_account_idx').on('event_count_changes')
    .columns(['account_id', 'type'])
    .execute()
  await sql`insert into event_counts (account_id, type, n)
    select account_id, type, count(*) from events group by account_id, type`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('event_count_changes').execute()
  await db.schema.dropTable('event_counts').execute()
}
