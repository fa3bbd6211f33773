import type { Trx } from '../db/database.js'

/** What a service needs to know about the caller of one operation. */
export interface RequestContext {
  accountId: string
  /**
   * The agent whose key (ak_) made the request, or absent for an account key (sk_/rk_). Services and
   * repositories keep such a caller to its own objects: the mandates granted to the agent, their payments.
   */
  agentId?: string | undefined
  /** The Request-Id, recorded on events; null for work not started by a request. */
  requestId: string | null
  /**
   * The transaction an idempotent request runs in. Services join it (db/transaction.ts) so that
   * their work and the idempotency record commit together.
   */
  transaction?: Trx | undefined
}
