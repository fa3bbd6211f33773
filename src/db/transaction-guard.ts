import { AsyncLocalStorage } from 'node:async_hooks'
import { type Dialect, Kysely, type TransactionBuilder } from 'kysely'

/**
 * The embedded store has one connection. While a transaction holds it, a query through the database
 * itself (`db.kysely`, not the transaction's `trx`) waits for the connection, and when that query is
 * made from inside the transaction's own work, the transaction waits for the query: a hang that no
 * timeout ends. This guard turns it into an error at once.
 *
 * Each transaction's work runs in an AsyncLocalStorage frame (what atproto's PDS asserts with
 * assertNotTransaction(), followed here through the async flow rather than by the caller). Asking the
 * driver for the connection checks the frame: the transaction's own queries never ask (Kysely hands
 * them the connection it holds), so only a query that would wait on its own transaction is refused.
 * Independent requests never run inside a frame and simply wait their turn, as before.
 *
 * Cost: the storage is enabled only while some transaction's work runs (Node 20 tracks async context
 * with promise hooks while any storage is enabled); otherwise a query's check is one integer test.
 */
export class QueryInsideTransactionError extends Error {
  override name = 'QueryInsideTransactionError'
  constructor() {
    super('A query through the database (db.kysely) was made inside a transaction on the same SQLite database. '
      + 'SQLite has one connection and the transaction holds it, so the query would wait forever: '
      + 'run it through the transaction (trx), or after the transaction has committed.')
  }
}

interface Frame {
  /** The connection the transaction holds. */
  readonly owner: object
  open: boolean
  /** The transaction, on another SQLite database, that this one was started inside, if any. */
  readonly outer: Frame | undefined
}

const flow = new AsyncLocalStorage<Frame>()
/** Transactions whose work is running, on every guarded database of the process. */
let running = 0

function openFrame(frame: Frame | undefined): Frame | undefined {
  while (frame && !frame.open) frame = frame.outer
  return frame
}

/** Whether the current async flow is inside the work of an open transaction on `owner`. */
export function insideTransactionOn(owner: object): boolean {
  if (running === 0) return false
  for (let frame = openFrame(flow.getStore()); frame; frame = openFrame(frame.outer)) {
    if (frame.owner === owner) return true
  }
  return false
}

/** Throws QueryInsideTransactionError when waiting for `owner`'s connection here would never end. */
export function assertNotInTransaction(owner: object): void {
  if (insideTransactionOn(owner)) throw new QueryInsideTransactionError()
}

async function runAsTransaction<T>(owner: object, work: () => Promise<T>): Promise<T> {
  // Work that outlives its transaction (a promise it left behind) finds the frame closed.
  const frame: Frame = { owner, open: true, outer: openFrame(flow.getStore()) }
  running++
  try {
    return await flow.run(frame, work)
  } finally {
    frame.open = false
    if (--running === 0) flow.disable()
  }
}

/** Kysely whose transactions mark their work, so that the driver can tell a query made inside one. */
class GuardedKysely<DB> extends Kysely<DB> {
  constructor(dialect: Dialect, private readonly owner: object) {
    super({ dialect })
  }

  override transaction(): TransactionBuilder<DB> {
    const builder = super.transaction()
    const execute = builder.execute.bind(builder)
    builder.execute = (callback) => execute((trx) => runAsTransaction(this.owner, () => callback(trx)))
    return builder
  }
}

/**
 * Kysely over one SQLite connection, guarded as above. `owner` stands for the connection (the
 * better-sqlite3 handle); the driver (sqlite-driver.ts) asserts with it when asked for the connection,
 * and so does code that takes the connection by other means (db/group-commit.ts).
 */
export function guardedSqliteKysely<DB>(dialect: Dialect, owner: object): Kysely<DB> {
  return new GuardedKysely<DB>(dialect, owner)
}
