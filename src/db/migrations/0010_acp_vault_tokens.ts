import type { Kysely } from 'kysely'

/**
 * ACP delegated payments (issue 15): a vault token is a single-use mandate of protocol `acp` (its cap the
 * allowance) plus what binds it: the merchant, the checkout session, and what a PSP may keep of the card
 * (display fields and a keyed fingerprint, never the number or the CVC). `parent_mandate_id` is the
 * Wishpay mandate whose budget it also draws on, when it was made under one.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('vault_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('mandate_id', 'text', (c) => c.notNull().references('mandates.id'))
    .addColumn('parent_mandate_id', 'text', (c) => c.references('mandates.id'))
    .addColumn('merchant_id', 'text', (c) => c.notNull())
    .addColumn('checkout_session_id', 'text', (c) => c.notNull())
    .addColumn('allowance', 'text', (c) => c.notNull())
    .addColumn('card', 'text', (c) => c.notNull())
    .addColumn('billing_address', 'text')
    .addColumn('risk_signals', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('vault_tokens_account_idx').on('vault_tokens').columns(['account_id', 'created_at']).execute()
  await db.schema.createIndex('vault_tokens_mandate_idx').on('vault_tokens').columns(['mandate_id']).unique().execute()
  // Secrets the server makes for itself on first use (the card fingerprint key, unless configured).
  await db.schema.createTable('server_secrets')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('server_secrets').execute()
  await db.schema.dropTable('vault_tokens').execute()
}
