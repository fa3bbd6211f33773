import type { Kysely } from 'kysely'

/**
 * A status-filtered wish list also tests expires_at (a wish past it reads expired). With expires_at in
 * the index, counting and skipping (offset) read the index alone instead of fetching every row.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('wishes_account_status_created_idx').execute()
  await db.schema.createIndex('wishes_account_status_created_idx').on('wishes')
    .columns(['account_id', 'status', 'created_at desc', 'id desc', 'expires_at']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('wishes_account_status_created_idx').execute()
  await db.schema.createIndex('wishes_account_status_created_idx').on('wishes')
    .columns(['account_id', 'status', 'created_at desc', 'id desc']).execute()
}
