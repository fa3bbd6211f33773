import type SQLite from 'better-sqlite3'
import { isTransactionFatalSqliteError } from './errors.js'
import { secondsSince, SharedCommits } from './shared-commits.js'

/**
 * The embedded store's one write path: every write, in a Kysely transaction, a group-commit piece or a
 * statement on its own, is a member of a durable batch. The first member opens `BEGIN IMMEDIATE`; a
 * Kysely transaction runs in a savepoint inside it (its rollback is `ROLLBACK TO` its savepoint, so it
 * fails alone), while a statement alone and a group-commit piece, which decide before they write, run
 * without one (runAlone); one `COMMIT` makes every member durable (synchronous=FULL: one fsync) and only then are
 * their callers answered. The COMMIT is issued by a flusher that takes the connection through the same
 * FIFO lock as everyone else, a turn after a member was released, so members already waiting for the
 * connection join first; a batch is also committed when it reaches `maxBatch` members, which bounds the
 * latency of its first.
 *
 * An error that ends the transaction, or calls for ending it (errors.ts), ends the batch: it is rolled
 * back and every member's caller is rejected, none of whom was answered yet.
 */

/** FIFO lock on the connection: whoever holds it may run statements; the rest wait in order. */
export class ConnectionLock {
  private held = false
  private readonly waiters: Array<() => void> = []

  lock(): Promise<void> {
    if (!this.held) {
      this.held = true
      return Promise.resolve()
    }
    return new Promise((resolve) => { this.waiters.push(resolve) })
  }

  unlock(): void {
    const next = this.waiters.shift()
    if (next) next()
    else this.held = false
  }
}

/** One BEGIN IMMEDIATE...COMMIT and the members it holds. */
export interface Batch {
  /** Settles once the batch is committed (resolves) or rolled back (rejects). */
  readonly durable: Promise<void>
  /** Members joined so far. */
  size: number
  /** Members released into it (work that will be committed). */
  released: number
  /** performance.now() once its BEGIN IMMEDIATE returned. */
  readonly begunAt: number
  resolve(): void
  reject(error: unknown): void
}

/** A transaction (or group-commit piece) running in its savepoint inside a batch. */
export interface Member {
  readonly batch: Batch
  /** Set when its work met an error that ends the whole transaction. */
  fatal?: unknown
}

/** How work run alone in a batch ended (DurableBatch#runAlone). */
export type AloneOutcome<T> =
  /** Done (its result kept with its batch) or declined (result undefined, nothing kept). */
  | { ok: true, result: T | undefined, batch: Batch }
  /** Failed; `ended`: no transaction is left to run more work in (the rest of a group cannot run). */
  | { ok: false, error: unknown, ended: boolean }

function newBatch(): Batch {
  let resolve!: () => void
  let reject!: (error: unknown) => void
  const durable = new Promise<void>((res, rej) => { resolve = res; reject = rej })
  // Members await it; a batch that fails with no member waiting must not be an unhandled rejection.
  durable.catch(() => {})
  return { durable, size: 0, released: 0, begunAt: performance.now(), resolve, reject }
}

const SAVEPOINT = 'batch_member'

export class DurableBatch {
  /** COMMITs issued (observable, for tests and the bench: COMMITs per request). */
  commits = 0
  /** Members released into a batch that was then committed. */
  committedMembers = 0
  private open: Batch | undefined
  /** The member whose savepoint is open: the transaction holding the lock, if any. */
  current: Member | undefined
  private flushScheduled = false
  private closed = false

  constructor(
    private readonly connection: SQLite.Database,
    readonly lock: ConnectionLock,
    private readonly maxBatch = 64,
    /** Runs before each COMMIT: the reader's snapshot ends there (turn-snapshot.ts). */
    private readonly beforeCommit: () => void = () => {},
    /** Hears of each COMMIT: its members and the seconds since it began (/metrics). */
    readonly sharedCommits = new SharedCommits(),
  ) {}

  /** The batch writes would join now, if one is open. */
  get openBatch(): Batch | undefined {
    return this.open
  }

  /** Under the lock: opens a savepoint for a new member, in the open batch or a new one. */
  begin(): Member {
    const batch = this.join()
    this.connection.exec(`SAVEPOINT ${SAVEPOINT}`)
    const member: Member = { batch }
    this.current = member
    return member
  }

  /** Under the lock: the member's work is done; it is committed with its batch. */
  release(member: Member): void {
    this.current = undefined
    if (member.fatal !== undefined) {
      // Its work caught an error that ends the transaction: nothing of the batch may commit.
      this.fail(member.batch, member.fatal)
      throw member.fatal
    }
    try {
      this.connection.exec(`RELEASE ${SAVEPOINT}`)
    } catch (error) {
      this.fail(member.batch, error)
      throw error
    }
    member.batch.released++
    this.scheduleFlush()
  }

  /**
   * Under the lock: undoes the member's work alone, or the whole batch when the error was fatal or the
   * transaction is already gone (SQLite rolls back by itself on some errors).
   */
  rollback(member: Member, error: unknown = member.fatal): void {
    this.current = undefined
    if (member.batch !== this.open) return
    if (member.fatal !== undefined || !this.connection.inTransaction || isTransactionFatalSqliteError(error)) {
      this.fail(member.batch, member.fatal ?? error ?? new Error('The transaction ended in the middle of a batch'))
      return
    }
    try {
      this.connection.exec(`ROLLBACK TO ${SAVEPOINT}; RELEASE ${SAVEPOINT}`)
    } catch (rollbackError) {
      this.fail(member.batch, rollbackError)
      return
    }
    // Nothing of this batch is to be kept: end it now rather than hold the write lock for nothing.
    if (member.batch.released === 0) this.end(member.batch)
  }

  /**
   * Under the lock: a write outside any transaction (a statement through `db.kysely`) joins the batch as
   * a member of its own; the statement is its own savepoint (SQLite undoes a failed statement alone).
   */
  runStatement<T>(run: () => T): { result: T, batch: Batch } {
    const outcome = this.runAlone(run, () => false)
    if (!outcome.ok) throw outcome.error
    return outcome as { result: T, batch: Batch }
  }

  /**
   * Under the lock: work that opens no savepoint of its own joins the open batch directly. A savepoint
   * costs SQLite a copy of every page the work then changes (about 7 % of a payment's instructions,
   * docs/performance.md, thirtieth pass), so work that decides before it writes does without. Until
   * `written()` says it has written, its error or its decline (an undefined result) is its own: a failed
   * statement SQLite undoes alone. Once it has, only the batch's rollback can undo its writes, so the batch
   * fails with it, and every member in it is rejected, none of them answered yet.
   */
  runAlone<T>(work: () => T | undefined, written: () => boolean): AloneOutcome<T> {
    let batch: Batch
    try {
      batch = this.join()
    } catch (error) {
      // BEGIN IMMEDIATE refused: another process holds the database's write lock.
      return { ok: false, error, ended: true }
    }
    let result: T | undefined
    try {
      result = work()
    } catch (error) {
      const ended = !this.connection.inTransaction || isTransactionFatalSqliteError(error)
      if (ended || written()) this.fail(batch, error)
      else if (batch.released === 0) this.end(batch)
      return { ok: false, error, ended }
    }
    if (result === undefined) {
      if (written()) {
        const error = new Error('Work declined after it had written, which only its whole batch could undo')
        this.fail(batch, error)
        return { ok: false, error, ended: false }
      }
      if (batch.released === 0) this.end(batch)
      return { ok: true, result, batch }
    }
    batch.released++
    this.scheduleFlush()
    return { ok: true, result, batch }
  }

  /** Under the lock: commits the open batch, if any, and answers its members. */
  commit(): void {
    const batch = this.open
    if (!batch) return
    this.open = undefined
    try {
      this.beforeCommit()
      this.connection.exec('COMMIT')
    } catch (error) {
      this.fail(batch, error)
      return
    }
    this.commits++
    this.committedMembers += batch.released
    batch.resolve()
    if (batch.released > 0) this.sharedCommits.report(batch.released, secondsSince(batch.begunAt))
  }

  /** Takes the lock, runs work with it (which may wait, holding the lock), and gives it back. */
  async exclusive<T>(work: () => T | Promise<T>): Promise<T> {
    if (this.closed) throw new Error('The database is closed')
    await this.lock.lock()
    try {
      if (this.closed) throw new Error('The database is closed')
      return await work()
    } finally {
      this.lock.unlock()
    }
  }

  /** Commits what is open and refuses further work; the caller closes the connection afterwards. */
  async close(): Promise<void> {
    if (this.closed) return
    await this.lock.lock()
    try {
      if (this.connection.open) this.commit()
      this.closed = true
    } finally {
      this.lock.unlock()
    }
  }

  get isClosed(): boolean {
    return this.closed
  }

  private join(): Batch {
    if (this.open && this.open.size >= this.maxBatch) this.commit()
    if (!this.open) {
      this.connection.exec('BEGIN IMMEDIATE')
      this.open = newBatch()
    }
    this.open.size++
    return this.open
  }

  /** Ends a batch that holds nothing to keep. */
  private end(batch: Batch): void {
    if (this.open !== batch) return
    this.open = undefined
    if (this.connection.inTransaction) this.connection.exec('ROLLBACK')
    batch.resolve()
  }

  private fail(batch: Batch, error: unknown): void {
    if (this.open === batch) this.open = undefined
    if (this.connection.inTransaction) {
      try { this.connection.exec('ROLLBACK') } catch { /* the transaction is gone either way */ }
    }
    batch.reject(error)
  }

  /** The flusher: a turn later, behind whoever already waits for the connection, COMMITs the batch. */
  private scheduleFlush(): void {
    if (this.flushScheduled) return
    this.flushScheduled = true
    setImmediate(() => {
      void this.lock.lock().then(() => {
        this.flushScheduled = false
        try {
          if (!this.closed) this.commit()
        } finally {
          this.lock.unlock()
        }
      })
    })
  }
}
