import { LRUCache } from 'lru-cache'
import type { Database, Executor } from '../../db/database.js'
import { isUniqueViolation } from '../../db/errors.js'
import { type Clock, systemClock, toTimestamp } from '../../lib/clock.js'
import { newId, randomFraction } from '../../lib/ids.js'
import { displayPrefix, generateKey, hashKey, isWellFormedKey, KEY_MAX_LENGTH, type Scope } from './keys.js'
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
 * How long an authenticated key is trusted without asking the database again, counted from the start
 * of the lookup that read it. A revocation made by another process (the CLI, another server) is honoured
 * within this time; one made through this process at once.
 */
export const KEY_CACHE_TTL_MS = 1000
/**
 * A hit on an entry older than this (plus up to a quarter of the TTL of jitter) looks the key up again in
 * the background and is served from the cache meanwhile, so a key in steady use is refreshed before it
 * lapses and its requests never wait on the database together.
 */
const KEY_REFRESH_AFTER_MS = KEY_CACHE_TTL_MS / 2
/** The cache's bound, in (estimated) bytes: about 4,000 keys. */
const KEY_CACHE_MAX_BYTES = 2 * 1024 * 1024

interface CachedKey {
  principal: Principal
  /** Epoch ms from which a hit starts a background lookup. */
  refreshAt: number
  /** Epoch ms from which the entry is not served. */
  expiresAt: number
}

/** What one entry holds: its key (a SHA-256 hex), the principal's strings, and object overhead. */
const entryBytes = (entry: CachedKey, hash: string): number =>
  2 * (hash.length + entry.principal.keyId.length + entry.principal.accountId.length + (entry.principal.agentId?.length ?? 0)) + 160

// lru-cache's get() allocates an options object when none is passed; this one is reused.
const GET_OPTIONS = {}
const ignore = () => {}

export function createAccountService(deps: { db: Database, clock: Clock }) {
  const { db, clock } = deps
  // The system clock without a Date per call; a test's clock as it is, so tests can make entries lapse.
  const nowMs = clock === systemClock ? Date.now : () => clock.now().getTime()
  // Known good keys only (by hash), so random guesses cannot fill it.
  const recentKeys = new LRUCache<string, CachedKey>({ maxSize: KEY_CACHE_MAX_BYTES, sizeCalculation: entryBytes })
  // One database lookup per key hash at a time: concurrent requests of a key whose entry lapsed wait on it.
  const inFlight = new Map<string, Promise<Principal | undefined>>()
  // Bumped by every forget: a lookup that started before a revocation must not put its answer back.
  let generation = 0
  let lookups = 0

  function forget(): void {
    generation++
    recentKeys.clear()
    inFlight.clear()
  }

  function lookUp(hash: string): Promise<Principal | undefined> {
    const pending = inFlight.get(hash)
    if (pending) return pending
    const startedAt = nowMs()
    const startedIn = generation
    lookups++
    const settle = () => { if (inFlight.get(hash) === lookup) inFlight.delete(hash) }
    const lookup = repo.findActiveKeyByHash(db.kysely, hash).then((row) => {
      settle()
      if (!row) {
        if (startedIn === generation) recentKeys.delete(hash)
        return undefined
      }
      const principal: Principal = { keyId: row.id, accountId: row.account_id, scope: row.scope, agentId: row.agent_id }
      if (startedIn === generation) {
        recentKeys.set(hash, {
          principal,
          refreshAt: startedAt + KEY_REFRESH_AFTER_MS + randomFraction() * (KEY_CACHE_TTL_MS / 4),
          expiresAt: startedAt + KEY_CACHE_TTL_MS,
        })
      }
      return principal
    }, (error: unknown) => {
      settle()
      throw error
    })
    inFlight.set(hash, lookup)
    return lookup
  }

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
      forget()
    },

    /** Database lookups of keys made so far (cache misses and refreshes): what the key cache saves. */
    keyLookups(): number {
      return lookups
    },

    async listKeys(accountName?: string): Promise<KeySummary[]> {
      return repo.listKeys(db.kysely, accountName)
    },

    async revokeKey(id: string): Promise<RevokeResult> {
      forget()
      const revoked = await repo.revokeKey(db.kysely, id, toTimestamp(clock.now()))
      // Again once committed: a lookup that read the key while the update ran must not be cached.
      forget()
      if (revoked) return 'revoked'
      return (await repo.findKeyById(db.kysely, id)) ? 'already_revoked' : 'not_found'
    },

    /**
     * The principal for a presented key, or undefined when it is malformed, unknown or revoked. A fresh
     * cache hit answers synchronously and allocates nothing beyond the key's hash; anything else answers
     * through the key's one lookup in flight.
     *
     * The cache holds only the hashes of keys that were well formed when they were looked up, so a hit
     * needs no shape check (its regular expression was about 1,400 instructions of a GET's 200,000,
     * docs/performance.md, twenty-eighth pass); a key too long to be one is refused before it is hashed.
     */
    authenticate(key: string): Principal | undefined | Promise<Principal | undefined> {
      if (key.length > KEY_MAX_LENGTH) return undefined
      const hash = hashKey(key)
      const cached = recentKeys.get(hash, GET_OPTIONS)
      if (cached !== undefined) {
        const now = nowMs()
        if (now < cached.expiresAt) {
          if (now >= cached.refreshAt && !inFlight.has(hash)) lookUp(hash).catch(ignore)
          return cached.principal
        }
      }
      if (!isWellFormedKey(key)) return undefined
      return lookUp(hash)
    },

    async hasAnyAccount(): Promise<boolean> {
      return (await repo.countAccounts(db.kysely)) > 0
    },
  }
}

export type AccountService = ReturnType<typeof createAccountService>
