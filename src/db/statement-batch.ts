import type { CompiledQuery, QueryResult } from 'kysely'
import type { PostgresHandle } from './database.js'
import { isDatabaseUnavailable, isServerError } from './errors.js'
import { checkArguments } from './pg-script.js'
import { secondsSince } from './shared-commits.js'

/** Runs a statement, as its own transaction or in one shared with statements submitted at the same time. */
export interface StatementBatch {
  /**
   * Resolves with the statement's result once it is committed. `lockKey` names the row the statement
   * locks first (a mandate): a shared transaction runs its statements in the order of these keys, so two
   * of them always lock rows in the same order and never deadlock each other. Several statements (which
   * need prepared statements on) run together, in order, and resolve with the last one's result.
   */
  run<R>(statement: CompiledQuery<R> | readonly CompiledQuery[], lockKey: string): Promise<QueryResult<R>>
}

export interface StatementBatchOptions {
  /** Statements in one transaction at most. */
  maxBatch?: number
  /**
   * Transactions of this batch open at once at most (each holds a pooled connection). Default: 1 when
   * statements go together (the batch grows while one is answered), 4 when each runs alone.
   */
  maxInFlight?: number
}

interface Pending {
  statements: readonly CompiledQuery[]
  lockKey: string
  resolve(result: QueryResult<unknown>): void
  reject(error: unknown): void
}

/**
 * Group commit for PostgreSQL: statements submitted while the batch's transactions are busy wait, then
 * go together as one simple query, which PostgreSQL runs as one transaction: one round trip and one WAL
 * flush for all of them. Statements that update the same row (payments on one mandate) are serialised
 * by its lock until their commit; sharing a commit is what lets several of them through per WAL flush,
 * which `commit_delay` cannot do for transactions that wait on each other's row lock. In one round trip,
 * too, the lock is held only while PostgreSQL works: a transaction of several round trips would hold it
 * while the answer to each waited for a busy event loop. Each statement is a prepared statement run by
 * `EXECUTE` (pg-script.ts), so PostgreSQL plans a payment's write once per connection, not per payment.
 *
 * A statement is atomic, and so is the transaction: if a statement of a shared transaction fails with
 * PostgreSQL's own error, the transaction rolled back whole and every statement of it runs again alone,
 * so each caller gets its own statement's outcome. Any other failure (the connection lost, no answer in
 * time, an answer that could not be read) leaves unknown whether it committed, and running it again
 * could commit it twice, or turn a wish that did commit into a duplicate key (a 500). Every caller gets
 * that failure, at once rather than after a timeout each: a 503 when the database is unavailable, which
 * a payment's retry with its idempotency key settles (it replays what did commit).
 */
export function createStatementBatch(postgres: PostgresHandle, options: StatementBatchOptions = {}): StatementBatch {
  // Without prepared statements a script cannot carry values: each statement runs alone, with its own.
  const maxBatch = postgres.prepares ? options.maxBatch ?? 64 : 1
  // One transaction at a time: what arrives meanwhile joins the next, so a process's own transactions do
  // not wait for each other's row locks nor keep more backends busy than it needs (PostgreSQL's CPU a
  // write about a quarter lower: docs/performance.md, ninth pass).
  const maxInFlight = options.maxInFlight ?? (maxBatch > 1 ? 1 : 4)
  const queue: Pending[] = []
  let inFlight = 0
  let scheduled = false

  function runAlone(item: Pending): Promise<void> {
    const sentAt = performance.now()
    return postgres.runTogether(item.statements).then((results) => {
      item.resolve({ rows: results.at(-1)!.rows })
      postgres.sharedCommits.report(1, secondsSince(sentAt))
    }, item.reject)
  }

  async function runShared(items: Pending[]): Promise<void> {
    // Stable: statements on the same row keep their order of arrival.
    items.sort((a, b) => (a.lockKey < b.lockKey ? -1 : a.lockKey > b.lockKey ? 1 : 0))
    let results: Array<{ rows: unknown[] }>
    const sentAt = performance.now()
    try {
      results = await postgres.runTogether(items.flatMap((item) => item.statements))
    } catch (error) {
      // Only the server's own error says that nothing committed (an outage's SQLSTATEs, such as a backend
      // shut down while committing, do not).
      if (!isServerError(error) || isDatabaseUnavailable(error)) {
        for (const item of items) item.reject(error)
        return
      }
      // Which statement failed, and whether for its own reason, only running each alone can tell. They
      // run outside the batch's slot: the next batch need not wait for all of them (one in flight).
      void Promise.all(items.map(runAlone))
      return
    }
    let end = 0
    for (const item of items) item.resolve({ rows: results[(end += item.statements.length) - 1]!.rows })
    postgres.sharedCommits.report(items.length, secondsSince(sentAt))
  }

  function dispatch(): void {
    scheduled = false
    while (inFlight < maxInFlight && queue.length > 0) {
      const items = queue.splice(0, maxBatch)
      inFlight++
      void (items.length === 1 ? runAlone(items[0]!) : runShared(items)).finally(() => {
        inFlight--
        if (queue.length > 0) schedule()
      })
    }
  }

  function schedule(): void {
    if (scheduled) return
    scheduled = true
    // A turn later, so that statements submitted in the same turn share a transaction.
    setImmediate(dispatch)
  }

  return {
    run<R>(statement: CompiledQuery<R> | readonly CompiledQuery[], lockKey: string): Promise<QueryResult<R>> {
      const statements = 'sql' in statement ? [statement] : statement
      // A value that cannot be sent fails its own caller here, never the transaction it would share.
      try {
        checkArguments(statements)
      } catch (error) {
        return Promise.reject(error)
      }
      return new Promise<QueryResult<R>>((resolve, reject) => {
        queue.push({ statements, lockKey, resolve: resolve as (result: QueryResult<unknown>) => void, reject })
        schedule()
      })
    },
  }
}
