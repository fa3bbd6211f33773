import type { Executor } from '../../db/database.js'
import type { MandatesTable, VaultTokensTable } from '../../db/schema.js'

export type VaultTokenRow = VaultTokensTable

export async function insertVaultToken(db: Executor, row: VaultTokenRow): Promise<void> {
  await db.insertInto('vault_tokens').values(row).execute()
}

/** The token with the mandate it is, for reading and for redemption. */
export function findVaultToken(db: Executor, accountId: string, id: string): Promise<(VaultTokenRow & { mandate: Pick<MandatesTable, 'status' | 'expires_at' | 'uses_count' | 'amount_used' | 'revoked_at'> }) | undefined> {
  return db.selectFrom('vault_tokens')
    .innerJoin('mandates', 'mandates.id', 'vault_tokens.mandate_id')
    .selectAll('vault_tokens')
    .select(['mandates.status as mandate_status', 'mandates.expires_at as mandate_expires_at', 'mandates.uses_count as mandate_uses_count',
      'mandates.amount_used as mandate_amount_used', 'mandates.revoked_at as mandate_revoked_at'])
    .where('vault_tokens.account_id', '=', accountId).where('vault_tokens.id', '=', id)
    .executeTakeFirst()
    .then((row) => row && {
      ...row,
      mandate: { status: row.mandate_status, expires_at: row.mandate_expires_at, uses_count: row.mandate_uses_count, amount_used: row.mandate_amount_used, revoked_at: row.mandate_revoked_at },
    })
}

/** The server's secret of this name, made by `make` on first use; of two processes making it at once, the first insert wins. */
export async function serverSecret(db: Executor, name: string, make: () => string, now: string): Promise<string> {
  const found = await db.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirst()
  if (found) return found.value
  await db.insertInto('server_secrets').values({ name, value: make(), created_at: now }).onConflict((oc) => oc.column('name').doNothing()).execute()
  const row = await db.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow()
  return row.value
}

/** The token that is this mandate, if any. */
export function findByMandate(db: Executor, mandateId: string): Promise<Pick<VaultTokenRow, 'id' | 'parent_mandate_id'> | undefined> {
  return db.selectFrom('vault_tokens').select(['id', 'parent_mandate_id']).where('mandate_id', '=', mandateId).executeTakeFirst()
}
