import type { Kysely } from 'kysely'

/**
 * Agents as principals (issue 14): an account's agents, agent keys (`api_keys.agent_id`, scope
 * `agent`), the agent a mandate is granted to, and the agent a wish is assigned to. Every new column
 * is nullable, so accounts that use no agents see nothing change.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('agents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('public_jwk', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('agents_account_idx').on('agents').columns(['account_id', 'created_at']).execute()
  await db.schema.alterTable('api_keys').addColumn('agent_id', 'text', (c) => c.references('agents.id')).execute()
  await db.schema.alterTable('mandates').addColumn('agent_id', 'text', (c) => c.references('agents.id')).execute()
  await db.schema.createIndex('mandates_agent_idx').on('mandates').columns(['account_id', 'agent_id', 'created_at']).execute()
  await db.schema.alterTable('wishes').addColumn('agent_id', 'text', (c) => c.references('agents.id')).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('wishes').dropColumn('agent_id').execute()
  await db.schema.dropIndex('mandates_agent_idx').execute()
  await db.schema.alterTable('mandates').dropColumn('agent_id').execute()
  await db.schema.alterTable('api_keys').dropColumn('agent_id').execute()
  await db.schema.dropTable('agents').execute()
}
