import type { Database, Executor } from '../../db/database.js'
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
  /** The agent an `agent` key acts for; absent for sk_/rk_ keys. */
  agent_id?: string
}

export interface KeySummary {
  id: string
  account_id: string
  account_name: string
  scope: Scope
  agent_id: string | null
  display_prefix: string
  created_at: string
  revoked_at: string | null
}

/** Who is calling: the result of authenticating a request's key. */
export interface Principal {
  keyId: string
  accountId: string
  scope: Scope
  /** The agent an `agent` key acts for; null for sk_/rk_ keys. Services keep it to its own objects. */
  agentId: string | null
}

export type RevokeResult = 'revoked' | 'already_revoked' | 'not_found'

/**
 * How long an authenticated key is trusted without asking the database again. A revocation made by
 * another process (the CLI, another server) is honoured within this time; one made through this process
 * at once.
 */
export const KEY_CACHE_TTL_MS = 1000
const KEY_CACHE_MAX = 10_000

export function createAccountService(deps: { db: Database, clock: Clock }) {
  const { db, clock } = deps
  // Known good keys only (by hash), so random guesses cannot fill it.
  const recentKeys = new Map<string, { principal: Principal, until: number }>()

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

  async function insertKey(executor: Executor, accountId: string, scope: Scope, agentId: string | null): Promise<CreatedKey> {
    const now = clock.now()
    const key = generateKey(scope)
    const id = newId('key', now)
    await repo.insertApiKey(executor, {
      id,
      account_id: accountId,
      scope,
      agent_id: agentId,
      key_hash: hashKey(key),
      display_prefix: displayPrefix(key),
      created_at: toTimestamp(now),
    })
    return { id, key, account_id: accountId, scope, ...(agentId === null ? {} : { agent_id: agentId }) }
  }

  return {
    /** Creates the account if it is new, then a key for it. */
    async createKey(accountName: string, scope: Exclude<Scope, 'agent'>): Promise<CreatedKey> {
      return insertKey(db.kysely, await ensureAccount(accountName), scope, null)
    },

    /**
     * A new `ak_` key for an agent of this account, in the caller's executor (the agent's row locked
     * or just checked active there). The agents service decides whether the agent may have one.
     */
    createAgentKey(executor: Executor, accountId: string, agentId: string): Promise<CreatedKey> {
      return insertKey(executor, accountId, 'agent', agentId)
    },

    /** Forgets every cached key, so a change made here (an agent disabled) is honoured at once. */
    forgetCachedKeys(): void {
      recentKeys.clear()
    },

    async listKeys(accountName?: string): Promise<KeySummary[]> {
      return repo.listKeys(db.kysely, accountName)
    },

    async revokeKey(id: string): Promise<RevokeResult> {
      recentKeys.clear()
      if (await repo.revokeKey(db.kysely, id, toTimestamp(clock.now()))) return 'revoked'
      return (await repo.findKeyById(db.kysely, id)) ? 'already_revoked' : 'not_found'
    },

    /** The principal for a presented key, or undefined when it is malformed, unknown or revoked. */
    async authenticate(key: string): Promise<Principal | undefined> {
      if (!isWellFormedKey(key)) return undefined
      const hash = hashKey(key)
      const now = clock.now().getTime()
      const cached = recentKeys.get(hash)
      if (cached && cached.until > now) return cached.principal
      const row = await repo.findActiveKeyByHash(db.kysely, hash)
      if (!row) {
        recentKeys.delete(hash)
        return undefined
      }
      const principal: Principal = { keyId: row.id, accountId: row.account_id, scope: row.scope, agentId: row.agent_id }
      if (recentKeys.size >= KEY_CACHE_MAX) recentKeys.clear()
      recentKeys.set(hash, { principal, until: now + KEY_CACHE_TTL_MS })
      return principal
    },

    async hasAnyAccount(): Promise<boolean> {
      return (await repo.countAccounts(db.kysely)) > 0
    },
  }
}

export type AccountService = ReturnType<typeof createAccountService>
