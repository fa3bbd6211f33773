import type { Kysely } from 'kysely'

// Migrations take Kysely<any>: they describe the schema at their own point in history.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()

  await db.schema.createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('display_prefix', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .execute()
  await db.schema.createIndex('api_keys_account_idx').on('api_keys').columns(['account_id', 'created_at']).execute()

  await db.schema.createTable('wishes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('query', 'text', (c) => c.notNull())
    .addColumn('budget_max', 'double precision')
    .addColumn('budget_currency', 'text')
    .addColumn('protocol', 'text', (c) => c.notNull())
    .addColumn('category', 'text')
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  // One index per list shape: all wishes newest first, and filtered by status newest first.
  await db.schema.createIndex('wishes_account_created_idx').on('wishes')
    .columns(['account_id', 'created_at desc', 'id desc']).execute()
  await db.schema.createIndex('wishes_account_status_created_idx').on('wishes')
    .columns(['account_id', 'status', 'created_at desc', 'id desc']).execute()

  // The transactional outbox: every state change writes its event in the same transaction.
  await db.schema.createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('object_id', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('events_account_created_idx').on('events')
    .columns(['account_id', 'created_at desc', 'id desc']).execute()
  await db.schema.createIndex('events_account_type_created_idx').on('events')
    .columns(['account_id', 'type', 'created_at desc', 'id desc']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['events', 'wishes', 'api_keys', 'accounts']) await db.schema.dropTable(table).execute()
}
