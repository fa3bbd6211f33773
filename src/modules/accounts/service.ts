import type { Database } from '../../db/database.js'
import { isUniqueViolation } from '../../db/errors.js'
import { type Clock, toTimestamp } from '../../lib/clock.js'
import { newId } from '../../lib/ids.js'
import { displayPrefix, generateKey, hashKey, isWellFormedKey, type Scope } from './keys.js'
import * as repo from './repository.js'

export interface CreatedKey {
  id: string
  /** The secret itself: shown once, never stored. */
  key: string
  account_id: string
  scope: Scope
}

export interface KeySummary {
  id: string
  account_id: string
  account_name: string
  scope: Scope
  display_prefix: string
  created_at: string
  revoked_at: string | null
}

/** Who is calling: the result of authenticating a request's key. */
export interface Principal {
  keyId: string
  accountId: string
  scope: Scope
}

export type RevokeResult = 'revoked' | 'already_revoked' | 'not_found'

export function createAccountService(deps: { db: Database, clock: Clock }) {
  const { db, clock } = deps

  async function ensureAccount(name: string): Promise<string> {
    const existing = await repo.findAccountByName(db.kysely, name)
    if (existing) return existing.id
    const now = clock.now()
    const id = newId('acct', now)
    try {
      await repo.insertAccount(db.kysely, { id, name, created_at: toTimestamp(now) })
      return id
    } catch (error) {
      // Another process created it between our read and insert: use theirs.
      if (!isUniqueViolation(error)) throw error
      const raced = await repo.findAccountByName(db.kysely, name)
      if (!raced) throw error
      return raced.id
    }
  }

  return {
    /** Creates the account if it is new, then a key for it. */
    async createKey(accountName: string, scope: Scope): Promise<CreatedKey> {
      const accountId = await ensureAccount(accountName)
      const now = clock.now()
      const key = generateKey(scope)
      const id = newId('key', now)
      await repo.insertApiKey(db.kysely, {
        id,
        account_id: accountId,
        scope,
        key_hash: hashKey(key),
        display_prefix: displayPrefix(key),
        created_at: toTimestamp(now),
      })
      return { id, key, account_id: accountId, scope }
    },

    async listKeys(accountName?: string): Promise<KeySummary[]> {
      return repo.listKeys(db.kysely, accountName)
    },

    async revokeKey(id: string): Promise<RevokeResult> {
      if (await repo.revokeKey(db.kysely, id, toTimestamp(clock.now()))) return 'revoked'
      return (await repo.findKeyById(db.kysely, id)) ? 'already_revoked' : 'not_found'
    },

    /** The principal for a presented key, or undefined when it is malformed, unknown or revoked. */
    async authenticate(key: string): Promise<Principal | undefined> {
      if (!isWellFormedKey(key)) return undefined
      const row = await repo.findActiveKeyByHash(db.kysely, hashKey(key))
      return row ? { keyId: row.id, accountId: row.account_id, scope: row.scope } : undefined
    },

    async hasAnyAccount(): Promise<boolean> {
      return (await repo.countAccounts(db.kysely)) > 0
    },
  }
}

export type AccountService = ReturnType<typeof createAccountService>
