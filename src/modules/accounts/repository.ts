import type { Executor } from '../../db/database.js'
import type { Scope } from './keys.js'

export interface NewApiKeyRow {
  id: string
  account_id: string
  scope: Scope
  agent_id: string | null
  key_hash: string
  display_prefix: string
  created_at: string
}

/**
 * Locks the account's row until the transaction ends, for a create that counts what the account has
 * (a capped collection): an update that changes nothing, so concurrent creates of one account run one
 * after the other and none counts before another's insert commits. On PostgreSQL it takes the row's
 * FOR NO KEY UPDATE lock (which, unlike FOR UPDATE, does not wait for the foreign-key checks of the
 * account's other inserts); on SQLite the database's write lock, so another process cannot write between.
 */
export async function lockAccountRow(trx: Executor, accountId: string): Promise<void> {
  await trx.updateTable('accounts').set((eb) => ({ created_at: eb.ref('created_at') })).where('id', '=', accountId).execute()
}

export function findAccountByName(db: Executor, name: string) {
  return db.selectFrom('accounts').selectAll().where('name', '=', name).executeTakeFirst()
}

export async function insertAccount(db: Executor, row: { id: string, name: string, created_at: string }) {
  await db.insertInto('accounts').values(row).execute()
}

export async function countAccounts(db: Executor): Promise<number> {
  const row = await db.selectFrom('accounts').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  return Number(row.n)
}

export async function insertApiKey(db: Executor, row: NewApiKeyRow) {
  await db.insertInto('api_keys').values({ ...row, revoked_at: null }).execute()
}

/** The live key with this hash, with its account; an agent key only while its agent is active. */
export function findActiveKeyByHash(db: Executor, keyHash: string) {
  return db.selectFrom('api_keys')
    .leftJoin('agents', 'agents.id', 'api_keys.agent_id')
    .select(['api_keys.id', 'api_keys.account_id', 'api_keys.scope', 'api_keys.agent_id'])
    .where('api_keys.key_hash', '=', keyHash)
    .where('api_keys.revoked_at', 'is', null)
    .where((eb) => eb.or([eb('api_keys.agent_id', 'is', null), eb('agents.status', '=', 'active')]))
    .executeTakeFirst()
}

export function listKeys(db: Executor, accountName?: string) {
  let query = db.selectFrom('api_keys')
    .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
    .select([
      'api_keys.id', 'api_keys.account_id', 'accounts.name as account_name', 'api_keys.scope', 'api_keys.agent_id',
      'api_keys.display_prefix', 'api_keys.created_at', 'api_keys.revoked_at',
    ])
    .orderBy('api_keys.created_at', 'desc').orderBy('api_keys.id', 'desc')
  if (accountName !== undefined) query = query.where('accounts.name', '=', accountName)
  return query.execute()
}

/** Revokes a live key; returns false when there is no such key or it was already revoked. */
export async function revokeKey(db: Executor, id: string, at: string): Promise<boolean> {
  const result = await db.updateTable('api_keys').set({ revoked_at: at })
    .where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

export function findKeyById(db: Executor, id: string) {
  return db.selectFrom('api_keys').select(['id', 'revoked_at']).where('id', '=', id).executeTakeFirst()
}
