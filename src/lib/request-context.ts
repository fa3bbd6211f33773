import type { Trx } from '../db/database.js'

/** What a service needs to know about the caller of one operation. */
export interface RequestContext {
  accountId: string
  /** The Request-Id, recorded on events; null for work not started by a request. */
  requestId: string | null
  /**
   * The transaction an idempotent request runs in. Services join it (db/transaction.ts) so that
   * their work and the idempotency record commit together.
   */
  transaction?: Trx | undefined
}
