import type { Kysely } from 'kysely'

/**
 * AP2 mandates enforced and receipted (issue 14).
 *
 * - mandates: what the hold checks for an AP2 open mandate beside the plain rules: the least amount per
 *   payment (`payment.amount_range.min`), the most payments (`agent_recurrence.max_occurrences`), the
 *   recurrence frequency and the time of the last payment that holds (one payment per window); the
 *   open mandate's hash (one Wishpay mandate per open mandate, per account) and the rest of it as JSON.
 * - payments: the closed mandate a payment was made with (`ap2`, JSON), null for a plain payment.
 * - ap2_nonces: the nonces an agent binds a closed mandate to (single use, short-lived; AP2 #326/#342).
 * - ap2_closed_mandates: every accepted closed mandate, by hash, written in the hold's transaction, so
 *   one consent pays at most once (AP2 #346).
 * - signing_keys: Wishpay's own keys for receipts (generated on first start), published as a JWKS.
 * - receipts: the signed PaymentReceipt of each AP2 payment that reached a final state.
 *
 * Every new mandates/payments column is nullable, so plain mandates and payments are unchanged.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('mandates').addColumn('min_amount', 'bigint').execute()
  await db.schema.alterTable('mandates').addColumn('max_uses', 'integer').execute()
  await db.schema.alterTable('mandates').addColumn('recurrence_frequency', 'text').execute()
  await db.schema.alterTable('mandates').addColumn('last_payment_at', 'text').execute()
  await db.schema.alterTable('mandates').addColumn('ap2_open_hash', 'text').execute()
  await db.schema.alterTable('mandates').addColumn('ap2', 'text').execute()
  await db.schema.createIndex('mandates_ap2_open_hash_idx').on('mandates').columns(['account_id', 'ap2_open_hash']).unique().execute()
  await db.schema.alterTable('payments').addColumn('ap2', 'text').execute()

  await db.schema.createTable('ap2_nonces')
    .addColumn('nonce', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('agent_id', 'text', (c) => c.references('agents.id'))
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('ap2_nonces_expiry_idx').on('ap2_nonces').columns(['expires_at']).execute()

  await db.schema.createTable('ap2_closed_mandates')
    .addColumn('hash', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('mandate_id', 'text', (c) => c.notNull().references('mandates.id'))
    .addColumn('payment_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()

  await db.schema.createTable('signing_keys')
    .addColumn('kid', 'text', (c) => c.primaryKey())
    .addColumn('alg', 'text', (c) => c.notNull())
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('private_jwk', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('retired_at', 'text')
    .execute()

  await db.schema.createTable('receipts')
    .addColumn('payment_id', 'text', (c) => c.primaryKey().references('payments.id'))
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('kid', 'text', (c) => c.notNull())
    .addColumn('jwt', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('receipts').execute()
  await db.schema.dropTable('signing_keys').execute()
  await db.schema.dropTable('ap2_closed_mandates').execute()
  await db.schema.dropTable('ap2_nonces').execute()
  await db.schema.alterTable('payments').dropColumn('ap2').execute()
  await db.schema.dropIndex('mandates_ap2_open_hash_idx').execute()
  for (const column of ['ap2', 'ap2_open_hash', 'last_payment_at', 'recurrence_frequency', 'max_uses', 'min_amount']) {
    await db.schema.alterTable('mandates').dropColumn(column).execute()
  }
}
