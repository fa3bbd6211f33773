import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    // Kept to sign deliveries; returned only by the create call and never logged.
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('disabled_reason', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('webhook_endpoints_account_created_idx').on('webhook_endpoints')
    .columns(['account_id', 'created_at desc', 'id desc']).execute()

  // One row per HTTP attempt: what GET /webhook_endpoints/:id/deliveries lists.
  await db.schema.createTable('webhook_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('error', 'text')
    .addColumn('succeeded', 'integer', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('next_retry_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('webhook_attempts_endpoint_created_idx').on('webhook_attempts')
    .columns(['endpoint_id', 'created_at desc', 'id desc']).execute()
  await db.schema.createIndex('webhook_attempts_delivery_idx').on('webhook_attempts')
    .columns(['endpoint_id', 'event_id']).execute()
  await db.schema.createIndex('webhook_attempts_created_idx').on('webhook_attempts').column('created_at').execute()

  // Retention deletes by age across accounts.
  await db.schema.createIndex('events_created_idx').on('events').column('created_at').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('events_created_idx').execute()
  await db.schema.dropTable('webhook_attempts').execute()
  await db.schema.dropTable('webhook_endpoints').execute()
}
