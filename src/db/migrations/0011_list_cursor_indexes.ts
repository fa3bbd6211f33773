import type { Kysely } from 'kysely'

/**
 * Cursor pagination (issue 16, item 4) seeks a list's index to `(created_at, id)` of the cursor object
 * (db/paging.ts), so every list's index must end in `created_at desc, id desc`, as those of wishes,
 * mandates, payments, refunds, events, webhook endpoints and delivery attempts already do. Three did
 * not hold the id: agents, trusted keys, and the mandates of one agent (an agent key's list). Each is
 * replaced by one that does; the old ones were prefixes of the new, so no other query loses its index.
 */
const REPLACED = [
  { table: 'agents', old: 'agents_account_idx', oldColumns: ['account_id', 'created_at'], name: 'agents_account_created_idx', columns: ['account_id', 'created_at desc', 'id desc'] },
  { table: 'trusted_keys', old: 'trusted_keys_account_idx', oldColumns: ['account_id', 'created_at'], name: 'trusted_keys_account_created_idx', columns: ['account_id', 'created_at desc', 'id desc'] },
  { table: 'mandates', old: 'mandates_agent_idx', oldColumns: ['account_id', 'agent_id', 'created_at'], name: 'mandates_account_agent_created_idx', columns: ['account_id', 'agent_id', 'created_at desc', 'id desc'] },
] as const

export async function up(db: Kysely<any>): Promise<void> {
  for (const index of REPLACED) {
    await db.schema.createIndex(index.name).on(index.table).columns([...index.columns]).execute()
    await db.schema.dropIndex(index.old).execute()
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const index of REPLACED) {
    await db.schema.createIndex(index.old).on(index.table).columns([...index.oldColumns]).execute()
    await db.schema.dropIndex(index.name).execute()
  }
}
