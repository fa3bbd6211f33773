import type { Kysely } from 'kysely'

/**
 * Trusted issuers (issue 14): the public keys an account trusts to sign AP2 open mandates, as a
 * Trusted Agent Provider or a User Credential issuer. A `kid` names one key of an account for good
 * (revoked keys keep theirs), so a mandate's header can never be matched to two keys.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('trusted_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('kid', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .execute()
  await db.schema.createIndex('trusted_keys_account_kid_idx').on('trusted_keys').columns(['account_id', 'kid']).unique().execute()
  await db.schema.createIndex('trusted_keys_account_idx').on('trusted_keys').columns(['account_id', 'created_at']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('trusted_keys').execute()
}
