import type { Compilable, CompiledQuery } from 'kysely'
import type { Database, SqliteHandle } from './database.js'
import { allRows, runWrite } from './sqlite-rows.js'
import { insideTransactionOn, QueryInsideTransactionError } from './transaction-guard.js'

/** Runs Kysely-built queries synchronously on the SQLite connection, inside a group's transaction. */
export interface SyncExecutor {
  /** The rows a query returns. */
  all<R>(query: Compilable<R> | CompiledQuery<R>): R[]
  /** Runs a statement; returns how many rows it changed. */
  run(query: Compilable<unknown> | CompiledQuery<unknown>): number
}

/**
 * Synchronous work on the database. Returning undefined declines. Work has no savepoint of its own
 * (durable-batch.ts, runAlone), so it must decide before it writes: declining or throwing before its first
 * write (a statement that changed rows, or any statement `all` ran that is not read-only) leaves the
 * rest of its group unaffected, and a statement that fails is undone alone by SQLite; after a write, its
 * error or decline fails its whole batch, whose other members are rejected too.
 */
export type GroupWork<T> = (exec: SyncExecutor) => T | undefined

const nextTurn = () => new Promise<void>((resolve) => { setImmediate(resolve) })

interface Pending {
  work: GroupWork<unknown>
  resolve(value: unknown): void
  reject(error: unknown): void
}

export interface GroupCommit {
  /** Resolves once the work is committed (durably, with synchronous=FULL), or declined. */
  submit<T>(work: GroupWork<T>): Promise<T | undefined>
}

/**
 * Group commit for the embedded store's synchronous work. Work submitted in the same turn of the event
 * loop, or while the connection is busy, runs under the connection's lock, each piece synchronously and
 * as a member of the open durable batch (durable-batch.ts: without a savepoint, see GroupWork; one COMMIT
 * for the batch, which Kysely transactions share), and no caller hears back before that COMMIT made its work durable. No
 * other query runs in the middle of a piece. Never submit from inside a Kysely transaction: the group
 * would wait for the connection that transaction holds (it is refused: db/transaction-guard.ts).
 *
 * The group (up to `maxGroup` pieces) runs `chunk` pieces a turn of the event loop and keeps the lock
 * between turns, so it still ends in one COMMIT. The turns matter because libuv accepts one connection
 * a turn (libuv#3696): when 64 pieces ran in one turn of 15 ms, 64 new connections took a second to be
 * accepted, which was the tail wrk measured (docs/performance.md).
 */
export function createGroupCommit(db: Pick<Database, 'kysely'> & { sqlite: SqliteHandle }, maxGroup = 64, chunk = 4): GroupCommit {
  const { sqlite } = db
  const { connection, batch } = sqlite
  const queue: Pending[] = []
  let scheduled = false

  const compiledOf = <R>(query: Compilable<R> | CompiledQuery<R>) => ('compile' in query ? query.compile() : query)
  /** Whether the piece running now has written (GroupWork): what decides if its failure is its own. */
  let written = false
  const exec: SyncExecutor = {
    all<R>(query: Compilable<R> | CompiledQuery<R>): R[] {
      const compiled = compiledOf(query)
      const statement = sqlite.prepare(compiled.sql)
      const rows = allRows(statement, compiled.parameters) as R[]
      // A statement that returns rows may write too (`returning`); better-sqlite3 knows which may.
      if (!statement.readonly) written = true
      return rows
    },
    run(query: Compilable<unknown> | CompiledQuery<unknown>): number {
      const compiled = compiledOf(query)
      // better-sqlite3 counts a statement's own changes: 0 for one that matched no row, which wrote nothing.
      const changes = runWrite(sqlite.prepare(compiled.sql), compiled.parameters).changes
      if (changes > 0) written = true
      return changes
    },
  }

  /** Runs the group's pieces in the open batch; answers each once its batch settled. */
  function runGroup(group: Pending[]): void {
    for (let i = 0; i < group.length; i++) {
      const item = group[i]!
      written = false
      const outcome = batch.runAlone(() => item.work(exec), () => written)
      if (outcome.ok) {
        const { result, batch: joined } = outcome
        if (result === undefined) item.resolve(undefined)
        else joined.durable.then(() => item.resolve(result), item.reject)
        continue
      }
      item.reject(outcome.error)
      // No transaction is left to run in: BEGIN IMMEDIATE was refused (another process holds the lock), or
      // an error ended the transaction or calls for ending it (SQLite's advice for a full disk, an I/O
      // error, no memory, a lock it could not get). The rest of this group fails too, none of it answered.
      if (outcome.ended) {
        for (const rest of group.slice(i + 1)) rest.reject(outcome.error)
        return
      }
    }
  }

  async function flush(): Promise<void> {
    scheduled = false
    let group: Pending[] = []
    let taken = 0
    try {
      // The connection is held from the group's first piece to its COMMIT: a piece queued meanwhile joins.
      await batch.exclusive(async () => {
        while (queue.length > 0 && taken < maxGroup) {
          group = queue.splice(0, Math.min(chunk, maxGroup - taken))
          taken += group.length
          runGroup(group)
          group = []
          // A turn of the event loop between chunks: libuv accepts one connection a turn, and the
          // requests waiting in their sockets are read, so a long group does not starve either.
          if (queue.length > 0 && taken < maxGroup) await nextTurn()
        }
        // The group's COMMIT under the same hold, as before the durable batch: handing it to the flusher
        // put every read already queued for the connection between the pieces and their fsync.
        batch.commit()
      })
    } catch (error) {
      // No connection (the database is closing): nothing queued can run.
      for (const item of group.length > 0 ? group : queue.splice(0)) item.reject(error)
    }
    if (queue.length > 0) schedule()
  }

  function schedule(): void {
    if (scheduled) return
    scheduled = true
    setImmediate(() => { void flush() })
  }

  return {
    submit<T>(work: GroupWork<T>): Promise<T | undefined> {
      // From inside a Kysely transaction the group would wait for the connection that transaction holds.
      if (insideTransactionOn(connection)) return Promise.reject(new QueryInsideTransactionError())
      return new Promise<T | undefined>((resolve, reject) => {
        queue.push({ work, resolve: resolve as (value: unknown) => void, reject })
        schedule()
      })
    },
  }
}
