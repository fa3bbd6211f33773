import type { Kysely } from 'kysely'

/**
 * The payments' (account, wish) list index holds only the payments that have a wish. A payment takes its
 * mandate's wish, and each payment on a mandate granted without one (an agent's standing allowance, every
 * payment of the benchmark) wrote an entry of a null wish that no list reads: the list by wish asks for
 * `wish_id = ?`, which both stores know a payment without a wish never matches, so they use the partial
 * index for it (pagination-cursors.test.ts holds both). Such a payment writes one index entry fewer
 * (docs/performance.md, twenty-sixth pass). The mandates' index of the same columns stays whole: mandates
 * are written once each, and one query reads it by `wish_id in (…)`.
 */
const NAME = 'payments_account_wish_created_idx'
const COLUMNS = ['account_id', 'wish_id', 'created_at desc', 'id desc']

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex(NAME).execute()
  await db.schema.createIndex(NAME).on('payments').columns(COLUMNS).where('wish_id', 'is not', null).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex(NAME).execute()
  await db.schema.createIndex(NAME).on('payments').columns(COLUMNS).execute()
}
