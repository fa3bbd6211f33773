import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  // Idempotency records: one per (account, key). Written in the same transaction as the work they
  // protect, so a record exists exactly when its work committed.
  await db.schema.createTable('idempotency_keys')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('response_status', 'integer', (c) => c.notNull())
    .addColumn('response_body', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['account_id', 'idempotency_key'])
    .execute()
  await db.schema.createIndex('idempotency_keys_expires_idx').on('idempotency_keys').column('expires_at').execute()

  await db.schema.createTable('mandates')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('protocol', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('wish_id', 'text')
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('max_amount', 'bigint', (c) => c.notNull())
    .addColumn('budget_amount', 'bigint', (c) => c.notNull())
    .addColumn('amount_used', 'bigint', (c) => c.notNull())
    .addColumn('usage', 'text', (c) => c.notNull())
    .addColumn('uses_count', 'integer', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('not_before', 'text')
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .execute()
  await db.schema.createIndex('mandates_account_created_idx').on('mandates')
    .columns(['account_id', 'created_at desc', 'id desc']).execute()
  await db.schema.createIndex('mandates_account_status_created_idx').on('mandates')
    .columns(['account_id', 'status', 'created_at desc', 'id desc']).execute()
  await db.schema.createIndex('mandates_account_wish_created_idx').on('mandates')
    .columns(['account_id', 'wish_id', 'created_at desc', 'id desc']).execute()
  // The expiry sweep looks only at open objects with a deadline: partial indexes keep that cheap
  // however many wishes and mandates have closed.
  await db.schema.createIndex('mandates_expiry_idx').on('mandates').column('expires_at')
    .where(sql.ref('status'), '=', sql.lit('active')).execute()
  await db.schema.createIndex('wishes_expiry_idx').on('wishes').column('expires_at')
    .where(sql<boolean>`status in ('active', 'pending') and expires_at is not null`).execute()

  await db.schema.createTable('payments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('mandate_id', 'text', (c) => c.notNull().references('mandates.id'))
    .addColumn('wish_id', 'text')
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('protocol_type', 'text', (c) => c.notNull())
    .addColumn('payment_method', 'text', (c) => c.notNull())
    .addColumn('amount_refunded', 'bigint', (c) => c.notNull())
    .addColumn('failure_code', 'text')
    .addColumn('failure_message', 'text')
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  for (const [name, columns] of [
    ['payments_account_created_idx', ['account_id', 'created_at desc', 'id desc']],
    ['payments_account_status_created_idx', ['account_id', 'status', 'created_at desc', 'id desc']],
    ['payments_account_mandate_created_idx', ['account_id', 'mandate_id', 'created_at desc', 'id desc']],
    ['payments_account_wish_created_idx', ['account_id', 'wish_id', 'created_at desc', 'id desc']],
  ] as const) {
    await db.schema.createIndex(name).on('payments').columns([...columns]).execute()
  }

  await db.schema.createTable('refunds')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('payment_id', 'text', (c) => c.notNull().references('payments.id'))
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('refunds_payment_created_idx').on('refunds')
    .columns(['payment_id', 'created_at desc', 'id desc']).execute()

  // Durable background work, claimed by any process (FOR UPDATE SKIP LOCKED on PostgreSQL).
  await db.schema.createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('run_at', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('locked_until', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('jobs_run_at_idx').on('jobs').column('run_at').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('wishes_expiry_idx').execute()
  for (const table of ['jobs', 'refunds', 'payments', 'mandates', 'idempotency_keys']) await db.schema.dropTable(table).execute()
}
