import { LRUCache } from 'lru-cache'
import type { Database, Trx } from '../../db/database.js'
import { claimsAcrossProcesses } from '../../db/locking.js'
import { toTimestamp } from '../../lib/clock.js'
import { errors } from '../../lib/errors.js'
import * as repo from './repository.js'
import type { IdempotencyRecord } from './repository.js'

export type { IdempotencyRecord } from './repository.js'

/** One request's use of a key: who sent it, the key, what it asked (fingerprint), and when. */
export interface KeyUse {
  accountId: string
  key: string
  fingerprint: string
  now: Date
}

/**
 * The answer a request under a key will give, not yet decided. A single write (a route's `oneWrite`)
 * asks it for the record that answers with `status` and `payload`, and writes that record with its work.
 */
export interface PendingAnswer {
  record(status: number, payload: unknown): IdempotencyRecord
}

/** What a transaction under a claimed key ended with: a fresh record, or one another process finished first. */
export interface Outcome {
  replayed: boolean
  record: IdempotencyRecord
}

/** Bounds the memory of the replay cache: what its entries hold on the heap, at most. */
const RECENT_RECORDS_BYTES = 4_000_000
const RECENT_RECORDS_TTL_MS = 60_000
/**
 * What an entry holds on the heap besides its body and key: the record object, its account id,
 * fingerprint and timestamps, the cache's key and its own bookkeeping. About 500 bytes measured (node 20);
 * test/unit/idempotency-replay-cache.test.ts checks that the estimate stays above what entries hold.
 */
const ENTRY_OVERHEAD_BYTES = 640

/**
 * An upper bound of the heap an entry of the replay cache holds. Strings count two bytes a character,
 * as V8 stores any string with a character past U+00FF (a wish in Japanese) in two-byte form; the key
 * is held twice, in the record and in the cache's key.
 */
export function replayCacheEntryBytes(record: Pick<IdempotencyRecord, 'response_body' | 'idempotency_key'>): number {
  return ENTRY_OVERHEAD_BYTES + 2 * (record.response_body.length + 2 * record.idempotency_key.length)
}

/** Deletes every record past its retention; returns how many went. */
export function purgeExpiredRecords(db: Pick<Database, 'kysely'>, now: Date): Promise<number> {
  return repo.purgeExpired(db.kysely, toTimestamp(now))
}

/**
 * Idempotency records: finding a live one, claiming a key, saving its record with the work it
 * protects, the replay cache, and the purge. The HTTP side (http/idempotency.ts) only parses keys,
 * fingerprints requests and writes answers.
 */
export function createIdempotencyStore(deps: { db: Database, ttlSeconds: number, replayCacheBytes?: number }) {
  const { db, ttlSeconds } = deps
  // Keys being worked on in this process: a second request answers 409 at once instead of queueing.
  const inFlight = new Set<string>()
  // Records this process read lately: a key's first replay reads its record from the database, the
  // next ones are answered from here. A live record is never changed or removed before it expires, by
  // any process, so a copy answers a retry exactly as the database would until then. The copy is also
  // dropped after a minute, which bounds what a record edited by hand, or overwritten by a server whose
  // clock runs ahead, could be answered from. The server builds one store (one app), so this bound is
  // the process's. Records this process writes are not cached: few are ever replayed, and a copy of
  // each write kept its answer alive into the old generation, for a mark-compact about every second
  // under load (docs/performance.md, twenty-third pass).
  const recent = new LRUCache<string, IdempotencyRecord>({
    ttl: RECENT_RECORDS_TTL_MS,
    maxSize: deps.replayCacheBytes ?? RECENT_RECORDS_BYTES,
    // A record larger than the whole bound is not cached (lru-cache refuses it); it is read again.
    sizeCalculation: replayCacheEntryBytes,
  })
  const slotOf = (use: Pick<KeyUse, 'accountId' | 'key'>) => `${use.accountId}\n${use.key}`

  /** Caches a committed record read back (never one whose transaction may still roll back). */
  function remember(record: IdempotencyRecord): void {
    recent.set(slotOf({ accountId: record.account_id, key: record.idempotency_key }), record)
  }

  /**
   * Claims the key for this transaction across processes, answering the record another process
   * finished, if any; 409 while another transaction holds it.
   */
  async function claim(trx: Trx, use: KeyUse): Promise<IdempotencyRecord | undefined> {
    if (!claimsAcrossProcesses(db)) return undefined
    const claimed = await repo.claimKey(trx, use.accountId, use.key, toTimestamp(use.now))
    if (!claimed.locked) throw errors.idempotencyKeyInUse()
    return claimed.record
  }

  return {
    /** The record that answers `use` with this status and (already serialized) body. */
    record(use: KeyUse, status: number, body: string): IdempotencyRecord {
      return {
        account_id: use.accountId,
        idempotency_key: use.key,
        fingerprint: use.fingerprint,
        response_status: status,
        response_body: body,
        created_at: toTimestamp(use.now),
        expires_at: toTimestamp(new Date(use.now.getTime() + ttlSeconds * 1000)),
      }
    },

    /** The live record of the key, from the replay cache or else the database, without a transaction. */
    async find(use: Pick<KeyUse, 'accountId' | 'key' | 'now'>): Promise<IdempotencyRecord | undefined> {
      const nowIso = toTimestamp(use.now)
      const cached = recent.get(slotOf(use))
      if (cached !== undefined && cached.expires_at > nowIso) return cached
      // Cached again only when read: a hit does not renew the copy's minute (see `recent`).
      const saved = await repo.findLive(db.kysely, use.accountId, use.key, nowIso)
      if (saved) remember(saved)
      return saved
    },

    /** Runs work while no other request of this process works on the key; 409 when one does. */
    async exclusively<T>(use: KeyUse, work: () => Promise<T>): Promise<T> {
      const slot = slotOf(use)
      if (inFlight.has(slot)) throw errors.idempotencyKeyInUse()
      inFlight.add(slot)
      try {
        return await work()
      } finally {
        inFlight.delete(slot)
      }
    },

    remember,

    /**
     * One transaction under the claimed key: the work, then its record, commit together, so the record
     * exists exactly when the work committed. The work gets `undo`, which rolls back what it wrote while
     * keeping the transaction for a record of the outcome (a saved 404 or 422).
     */
    async transact(use: KeyUse, work: (trx: Trx, undo: () => Promise<void>) => Promise<IdempotencyRecord>): Promise<Outcome> {
      const outcome = await db.kysely.transaction().execute(async (trx): Promise<Outcome> => {
        const finished = await claim(trx, use)
        if (finished) return { replayed: true, record: finished }
        await repo.markWorkStart(trx)
        const record = await work(trx, () => repo.undoWork(trx))
        // The caller holds the key, so a live record here means a bug, not a race.
        if (!await repo.save(trx, record, toTimestamp(use.now))) throw errors.idempotencyKeyInUse()
        return { replayed: false, record }
      })
      // Another process's record, read in the claim, is cached as find() caches it; a new one is not.
      if (outcome.replayed) remember(outcome.record)
      return outcome
    },

    purge: (now: Date) => purgeExpiredRecords(db, now),
  }
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>
