import { type Kysely, sql } from 'kysely'

/**
 * `meta.total` of a wish list from counters instead of counting up to millions of index entries per
 * request. Each account and stored status has a few slots; a writer adds to one chosen at random, so
 * concurrent writers of one account rarely wait on the same row, and a reader sums the slots. Wishes
 * that lapsed since the last sweep are found through the partial index below.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('wish_counts')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('slot', 'integer', (c) => c.notNull())
    .addColumn('n', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('wish_counts_pk', ['account_id', 'status', 'slot'])
    .execute()
  await sql`insert into wish_counts (account_id, status, slot, n)
    select account_id, status, 0, count(*) from wishes group by account_id, status`.execute(db)
  await db.schema.createIndex('wishes_account_lapse_idx').on('wishes')
    .columns(['account_id', 'status', 'expires_at'])
    .where(sql.ref('expires_at'), 'is not', null)
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('wishes_account_lapse_idx').execute()
  await db.schema.dropTable('wish_counts').execute()
}
