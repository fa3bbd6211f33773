import type { Compilable } from 'kysely'
import type { Database, SqliteHandle } from './database.js'
import { isTransactionFatalSqliteError } from './errors.js'
import { insideTransactionOn, QueryInsideTransactionError } from './transaction-guard.js'

/** Runs Kysely-built queries synchronously on the SQLite connection, inside a group's transaction. */
export interface SyncExecutor {
  /** The rows a query returns. */
  all<R>(query: Compilable<R>): R[]
  /** Runs a statement; returns how many rows it changed. */
  run(query: Compilable<unknown>): number
}

/**
 * Synchronous work on the database. Returning undefined declines: what it wrote is rolled back, as is
 * everything of work that throws; either way the rest of its group is unaffected.
 */
export type GroupWork<T> = (exec: SyncExecutor) => T | undefined

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
 * Group commit for the embedded store. Its one connection runs transactions one after another and each
 * COMMIT waits for an fsync; work submitted in the same turn of the event loop, or while the connection
 * is busy, runs instead in one transaction, each piece in its own savepoint, and one COMMIT makes all of
 * it durable before any caller hears back. The work runs synchronously under Kysely's connection lock,
 * so no other query ever sees a group half done. Never submit from inside a Kysely transaction: the
 * group would wait for the connection that transaction holds (it is refused: db/transaction-guard.ts).
 */
export function createGroupCommit(db: Pick<Database, 'kysely'> & { sqlite: SqliteHandle }, maxGroup = 64): GroupCommit {
  const { sqlite } = db
  const { connection } = sqlite
  const queue: Pending[] = []
  let scheduled = false

  const exec: SyncExecutor = {
    all<R>(query: Compilable<R>): R[] {
      const compiled = query.compile()
      return sqlite.prepare(compiled.sql).all(compiled.parameters as unknown[]) as R[]
    },
    run(query: Compilable<unknown>): number {
      const compiled = query.compile()
      return sqlite.prepare(compiled.sql).run(compiled.parameters as unknown[]).changes
    },
  }

  function runGroup(group: Pending[]): void {
    const outcomes: Array<{ ok: true, value: unknown } | { ok: false, error: unknown }> = []
    try {
      connection.exec('BEGIN IMMEDIATE')
      for (const item of group) {
        connection.exec('SAVEPOINT grouped_work')
        try {
          const value = item.work(exec)
          connection.exec(value === undefined ? 'ROLLBACK TO grouped_work; RELEASE grouped_work' : 'RELEASE grouped_work')
          outcomes.push({ ok: true, value })
        } catch (error) {
          // Some errors end the whole transaction, or call for ending it (SQLite's advice for a full
          // disk, an I/O error, no memory, a lock it could not get): the group fails together.
          if (!connection.inTransaction || isTransactionFatalSqliteError(error)) throw error
          connection.exec('ROLLBACK TO grouped_work; RELEASE grouped_work')
          outcomes.push({ ok: false, error })
        }
      }
      connection.exec('COMMIT')
    } catch (error) {
      if (connection.inTransaction) connection.exec('ROLLBACK')
      for (const item of group) item.reject(error)
      return
    }
    group.forEach((item, i) => {
      const outcome = outcomes[i]!
      if (outcome.ok) item.resolve(outcome.value)
      else item.reject(outcome.error)
    })
  }

  async function flush(): Promise<void> {
    scheduled = false
    let group: Pending[] = []
    try {
      // The group is taken once the connection is ours, so work queued while waiting for it joins.
      await db.kysely.connection().execute(async () => {
        group = queue.splice(0, maxGroup)
        if (group.length > 0) runGroup(group)
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
