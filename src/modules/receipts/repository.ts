import type { Executor } from '../../db/database.js'
import type { ReceiptsTable, SigningKeysTable } from '../../db/schema.js'

export type SigningKeyRow = SigningKeysTable
export type ReceiptRow = ReceiptsTable
/** A signing key without its private half: what the JWKS is made from. */
export type PublicKeyRow = Pick<SigningKeyRow, 'kid' | 'alg' | 'public_jwk' | 'status' | 'created_at' | 'retired_at'>

export async function insertSigningKey(db: Executor, row: SigningKeyRow): Promise<void> {
  await db.insertInto('signing_keys').values(row).execute()
}

/** The key every process signs with: the oldest active one (created_at, then kid), so all agree. */
export function oldestActiveKey(db: Executor): Promise<SigningKeyRow | undefined> {
  return db.selectFrom('signing_keys').selectAll().where('status', '=', 'active')
    .orderBy('created_at', 'asc').orderBy('kid', 'asc').limit(1).executeTakeFirst()
}

/** Active keys, and retired ones retired at or after `retiredSince`; never the private halves. */
export function publishedKeys(db: Executor, retiredSince: string): Promise<PublicKeyRow[]> {
  return db.selectFrom('signing_keys').select(['kid', 'alg', 'public_jwk', 'status', 'created_at', 'retired_at'])
    .where((eb) => eb.or([eb('status', '=', 'active'), eb('retired_at', '>=', retiredSince)]))
    .orderBy('created_at', 'asc').orderBy('kid', 'asc').execute()
}

/** Retires every active key; returns their kids. */
export async function retireActiveKeys(trx: Executor, now: string): Promise<string[]> {
  const rows = await trx.updateTable('signing_keys').set({ status: 'retired', retired_at: now })
    .where('status', '=', 'active').returning('kid').execute()
  return rows.map((r) => r.kid)
}

export function findReceipt(db: Executor, paymentId: string): Promise<ReceiptRow | undefined> {
  return db.selectFrom('receipts').selectAll().where('payment_id', '=', paymentId).executeTakeFirst()
}

/** Stores a receipt unless the payment has one already (the first one stored stays). */
export async function insertReceiptIfAbsent(db: Executor, row: ReceiptRow): Promise<void> {
  await db.insertInto('receipts').values(row).onConflict((oc) => oc.column('payment_id').doNothing()).execute()
}
