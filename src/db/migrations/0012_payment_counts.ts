import { type Kysely, sql } from 'kysely'

/**
 * `meta.total` of a payment list from counters instead of counting up to millions of index entries per
 * request (docs/performance.md, issue 16's 1M-payment run: the count was nearly all of each answer).
 *
 * A payment write does not add to a counter row: on PostgreSQL that row would be locked between the
 * mandate locks of a shared transaction (db/statement-batch.ts), and a general-path payment holding one
 * of those mandates could then deadlock with it. It inserts a change instead, which locks nothing; a
 * periodic fold (jobs/payment-count-fold.ts) moves the changes into `payment_counts`, and a reader sums
 * both in one statement. The changes carry no foreign key: they are derived from payments, which carry
 * theirs, and a key check per payment is a cost PostgreSQL's profile already shows.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('payment_counts')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('n', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('payment_counts_pk', ['account_id', 'status'])
    .execute()
  await db.schema.createTable('payment_count_changes')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('n', 'integer', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('payment_count_changes_account_idx').on('payment_count_changes')
    .columns(['account_id', 'status'])
    .execute()
  await sql`insert into payment_counts (account_id, status, n)
    select account_id, status, count(*) from payments group by account_id, status`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('payment_count_changes').execute()
  await db.schema.dropTable('payment_counts').execute()
}
