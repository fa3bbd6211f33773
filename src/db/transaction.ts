import type { RequestContext } from '../lib/request-context.js'
import type { Database, Trx } from './database.js'

/**
 * Runs work in the request's transaction when it has one (an idempotent request), else in a new
 * transaction. Either way the work, its events and any idempotency record commit together.
 */
export function inTransaction<T>(
  db: Database,
  ctx: Pick<RequestContext, 'transaction'>,
  work: (trx: Trx) => Promise<T>,
): Promise<T> {
  return ctx.transaction ? work(ctx.transaction) : db.kysely.transaction().execute(work)
}
