import { type Kysely, sql } from 'kysely'

/**
 * A mandate never outlives its wish (docs/decisions.md): new mandates are clamped when made, and a wish
 * that moves its deadline earlier moves theirs. Mandates made before that rule are clamped here once,
 * so a payment cannot slip in between a wish's deadline and the next expiry sweep.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`update mandates set expires_at = (
      select w.expires_at from wishes w where w.id = mandates.wish_id)
    where status = 'active' and wish_id is not null
      and exists (select 1 from wishes w where w.id = mandates.wish_id
        and w.expires_at is not null and w.expires_at < mandates.expires_at)`.execute(db)
}

/** Nothing to undo: the earlier deadline was already the one in force. */
export async function down(): Promise<void> {}
