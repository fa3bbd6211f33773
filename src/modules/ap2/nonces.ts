import type { Database } from '../../db/database.js'
import { inTransaction } from '../../db/transaction.js'
import { type Clock, toTimestamp } from '../../lib/clock.js'
import { randomBase62 } from '../../lib/ids.js'
import type { RequestContext } from '../../lib/request-context.js'
import * as repo from './repository.js'
import type { Nonce } from './schemas.js'

/** How long a nonce may wait for its closed mandate: enough for a user to confirm, short enough to be fresh. */
export const NONCE_TTL_SECONDS = 300

/**
 * The `aud` a closed Payment Mandate for this account must carry (AP2 #326/#342): the account's id,
 * which is stable and needs no configuration; `wishpay:` says whose id it is.
 */
export function audienceFor(accountId: string): string {
  return `wishpay:${accountId}`
}

function toNonce(row: repo.NonceRow): Nonce {
  return { nonce: row.nonce, audience: audienceFor(row.account_id), agent_id: row.agent_id, expires_at: row.expires_at, created_at: row.created_at }
}

/** How long a lapsed nonce is kept, so that a late payment hears "lapsed" rather than "not issued". */
export const LAPSED_NONCE_RETENTION_MS = 86_400_000

/** Deletes nonces that lapsed more than a day ago, in batches; returns how many. */
export async function purgeLapsedNonces(db: Database, now: Date): Promise<number> {
  const before = toTimestamp(new Date(now.getTime() - LAPSED_NONCE_RETENTION_MS))
  let total = 0
  for (;;) {
    const deleted = await repo.pruneNonces(db.kysely, before, 1000)
    total += deleted
    if (deleted < 1000) return total
  }
}

/** Nonces for AP2 closed mandates: issued here, used once by the payment that carries them. */
export function createNonceService(deps: { db: Database, clock: Clock }) {
  const { db, clock } = deps
  return {
    async create(ctx: RequestContext): Promise<Nonce> {
      const nowDate = clock.now()
      const row: repo.NonceRow = {
        // 32 base62 characters: 190 bits, never guessed.
        nonce: randomBase62(32),
        account_id: ctx.accountId,
        agent_id: ctx.agentId ?? null,
        expires_at: toTimestamp(new Date(nowDate.getTime() + NONCE_TTL_SECONDS * 1000)),
        used_at: null,
        created_at: toTimestamp(nowDate),
      }
      await inTransaction(db, ctx, (trx) => repo.insertNonce(trx, row))
      return toNonce(row)
    },
  }
}

export type NonceService = ReturnType<typeof createNonceService>
