import type { Executor } from '../../db/database.js'
import type { Ap2ClosedMandatesTable, Ap2NoncesTable } from '../../db/schema.js'

export type NonceRow = Ap2NoncesTable
export type ClosedMandateRow = Ap2ClosedMandatesTable

export async function insertNonce(db: Executor, row: NonceRow): Promise<void> {
  await db.insertInto('ap2_nonces').values(row).execute()
}

export function findNonce(db: Executor, accountId: string, nonce: string): Promise<NonceRow | undefined> {
  return db.selectFrom('ap2_nonces').selectAll().where('account_id', '=', accountId).where('nonce', '=', nonce).executeTakeFirst()
}

/**
 * Uses a nonce: one conditional update, so that of any number of concurrent uses in any number of
 * processes exactly one succeeds. A nonce issued to an agent's key serves that agent only.
 */
export async function useNonce(trx: Executor, p: { accountId: string, nonce: string, agentId: string | undefined, now: string }): Promise<boolean> {
  const result = await trx.updateTable('ap2_nonces').set({ used_at: p.now })
    .where('account_id', '=', p.accountId).where('nonce', '=', p.nonce)
    .where('used_at', 'is', null).where('expires_at', '>', p.now)
    .where((eb) => eb.or([eb('agent_id', 'is', null), ...(p.agentId === undefined ? [] : [eb('agent_id', '=', p.agentId)])]))
    .executeTakeFirst()
  return Number(result.numUpdatedRows) === 1
}

/**
 * Records an accepted closed mandate. Its hash is the primary key, so a second payment with the same
 * closed mandate fails on insert (a unique violation) in whichever transaction comes second (AP2 #346).
 */
export async function insertClosedMandate(trx: Executor, row: ClosedMandateRow): Promise<void> {
  await trx.insertInto('ap2_closed_mandates').values(row).execute()
}

/** Deletes nonces that lapsed before `before`; they can never be used again. Returns how many. */
export async function pruneNonces(db: Executor, before: string, limit: number): Promise<number> {
  const result = await db.deleteFrom('ap2_nonces')
    .where('nonce', 'in', (eb) => eb.selectFrom('ap2_nonces').select('nonce').where('expires_at', '<', before).limit(limit))
    .executeTakeFirst()
  return Number(result.numDeletedRows)
}
