import { type CompiledQuery, type DatabaseConnection, type Driver, type QueryResult, SqliteDialect } from 'kysely'
import type { StatementCache } from './database.js'
import { type Batch, DurableBatch } from './durable-batch.js'
import { isTransactionFatalSqliteError } from './errors.js'
import { allRows, runWrite } from './sqlite-rows.js'
import type { TurnSnapshot } from './turn-snapshot.js'
import { assertNotInTransaction } from './transaction-guard.js'

/**
 * Kysely's driver for the embedded store, writing through a durable batch (durable-batch.ts):
 * - a Kysely transaction is a member of the open batch (its savepoint); `transaction().execute()`
 *   resolves only once the batch's COMMIT made it durable, because releasing the connection waits for it;
 * - a write outside any transaction (a statement through `db.kysely`) is a member of its own, answered
 *   the same way;
 * - a read outside any transaction runs on a second, read-only connection, which sees the last COMMIT
 *   only: like a commit on PostgreSQL, a write becomes visible to other requests once it is durable, and
 *   never before its writer is answered. The reads of one turn of the event loop share a read transaction
 *   there, which every COMMIT ends first (turn-snapshot.ts). A scope that wrote (a `connection()` block,
 *   the migrator) reads on the writer so that it sees its own writes. `:memory:` has no second
 *   connection; reads there run on the writer and may see released members (nothing there is durable
 *   anyway);
 * - PRAGMA, VACUUM, ATTACH and DETACH do not work inside a transaction: the open batch is committed first.
 * Every statement through Kysely waits its turn on the one connection (a FIFO lock), as Kysely's driver did.
 *
 * Direct reads, the one exception: a hot read that reusableQuery (reusable-query.ts) runs on the database
 * itself (`db.kysely`, not a transaction nor a `connection()` block) goes straight to the reader's cached
 * statement, synchronously, without the lock and without Kysely's executor (directReaderOf below). The
 * lock guards the writer only, and the reader sees the last COMMIT whoever holds the lock, so such a read
 * need not wait behind a transaction or a group commit (db/group-commit.ts holds the lock across turns
 * until its COMMIT): it answers from the same committed snapshot it would have read on its turn, or an
 * older one that its caller could equally have seen. Only read-only statements that return rows take it;
 * anything else, and every query on `:memory:` (no reader), takes the path above. A direct read from
 * inside one of the database's transactions is refused as the lock would have been (transaction-guard.ts).
 */

/** Statements SQLite ignores or refuses inside a transaction. */
const OUTSIDE_TRANSACTIONS = /^\s*(pragma|vacuum|attach|detach)\b/i

function execute(statement: ReturnType<StatementCache['prepare']>, parameters: readonly unknown[]): QueryResult<unknown> {
  if (statement.reader) return { rows: allRows(statement, parameters) }
  const { changes, lastInsertRowid } = runWrite(statement, parameters)
  return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] }
}

/** One holder of the connection (a query, a transaction, a `connection()` block). */
class Scope implements DatabaseConnection {
  /** Batches its own writes joined; giving the connection back waits until they are durable. */
  batches: Batch[] | undefined

  constructor(private readonly driver: BatchingSqliteDriver) {}

  executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    try {
      return Promise.resolve(this.driver.run(this, compiled) as QueryResult<R>)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  async *streamQuery<R>(compiled: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    const { rows } = this.driver.run(this, compiled) as QueryResult<R>
    for (const row of rows) yield { rows: [row] }
  }

  joined(batch: Batch): void {
    if (!this.batches) this.batches = [batch]
    else if (!this.batches.includes(batch)) this.batches.push(batch)
  }
}

export class BatchingSqliteDriver implements Driver, DirectReader {
  readonly batch: DurableBatch

  constructor(
    private readonly writer: StatementCache,
    private readonly reader: (StatementCache & { snapshot: TurnSnapshot }) | undefined,
    batch: DurableBatch,
  ) {
    this.batch = batch
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    // A query made inside a transaction's own work would wait for the connection that transaction holds.
    assertNotInTransaction(this.writer.connection)
    if (this.batch.isClosed) throw new Error('The database is closed')
    await this.batch.lock.lock()
    if (this.batch.isClosed) {
      this.batch.lock.unlock()
      throw new Error('The database is closed')
    }
    return new Scope(this)
  }

  async beginTransaction(): Promise<void> {
    this.batch.begin()
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const member = this.batch.current
    if (!member) throw new Error('No transaction is open')
    this.batch.release(member)
    ;(connection as Scope).joined(member.batch)
  }

  async rollbackTransaction(): Promise<void> {
    const member = this.batch.current
    if (member) this.batch.rollback(member)
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    this.batch.lock.unlock()
    const batches = (connection as Scope).batches
    // Nothing this holder wrote is answered before the flusher's COMMIT made it durable.
    if (batches) for (const batch of batches) await batch.durable
  }

  async destroy(): Promise<void> {
    await this.batch.close()
    if (this.reader?.connection.open) this.reader.connection.close()
    if (this.writer.connection.open) this.writer.connection.close()
  }

  get hasReader(): boolean {
    return this.reader !== undefined
  }

  /**
   * A direct read (see the rules at the top): a read-only statement that returns rows, on the reader, at
   * once and without the lock. Undefined for anything else, which the caller runs through Kysely.
   */
  read(compiled: CompiledQuery): unknown[] | undefined {
    const { reader } = this
    if (reader === undefined) return undefined
    const { sql, parameters } = compiled
    if (OUTSIDE_TRANSACTIONS.test(sql)) return undefined
    // The same refusals as asking for the connection: from inside one of this database's transactions
    // a query through it is a mistake (it would wait for that transaction on any other path), and a
    // closed database answers nothing.
    assertNotInTransaction(this.writer.connection)
    if (this.batch.isClosed) throw new Error('The database is closed')
    const statement = reader.prepare(sql)
    if (!statement.readonly || !statement.reader) return undefined
    reader.snapshot.enter()
    return allRows(statement, parameters)
  }

  /** Runs one statement for a holder of the connection (see the rules at the top). */
  run(scope: Scope, compiled: CompiledQuery): QueryResult<unknown> {
    const { sql, parameters } = compiled
    const statement = this.writer.prepare(sql)
    const member = this.batch.current
    if (member) {
      // The batch's transaction ended under it (SQLite rolls back by itself on some errors): running on
      // would write in autocommit, durable at once, for a member that is about to fail.
      if (!this.writer.connection.inTransaction) {
        member.fatal = new Error('The transaction ended in the middle of a batch; nothing of it was committed')
        throw member.fatal
      }
      try {
        return execute(statement, parameters)
      } catch (error) {
        // The member's work may catch it, but the batch cannot commit after it (durable-batch.ts).
        if (isTransactionFatalSqliteError(error)) member.fatal = error
        throw error
      }
    }
    if (OUTSIDE_TRANSACTIONS.test(sql)) {
      this.batch.commit()
      // A checkpoint, or a VACUUM, would otherwise wait for the reader's snapshot.
      this.reader?.snapshot.end()
      return execute(statement, parameters)
    }
    if (statement.readonly) {
      const reader = scope.batches === undefined ? this.reader : undefined
      if (reader === undefined) return execute(statement, parameters)
      reader.snapshot.enter()
      return execute(reader.prepare(sql), parameters)
    }
    const { result, batch } = this.batch.runStatement(() => execute(statement, parameters))
    scope.joined(batch)
    return result
  }
}

/** Runs a compiled query directly on a store's reader connection (see the rules at the top). */
export interface DirectReader {
  /** The rows, read synchronously; undefined when the query must take Kysely's path instead. */
  read(compiled: CompiledQuery): unknown[] | undefined
}

/**
 * Keyed by the Kysely instance itself: its transactions, `connection()` blocks and `withPlugin()` copies
 * are other objects (a transaction shares its adapter and dialect), so they never find a direct reader.
 */
const directReaders = new WeakMap<object, DirectReader>()

/** Lets reads through `kysely`, which runs on `driver`, take the direct path when the store has a reader. */
export function allowDirectReads(kysely: object, driver: BatchingSqliteDriver): void {
  if (driver.hasReader) directReaders.set(kysely, driver)
}

/** The direct reader of `db` when it is such a store's Kysely instance (not one of its transactions). */
export function directReaderOf(db: object): DirectReader | undefined {
  return directReaders.get(db)
}

/** Kysely's SQLite dialect (adapter, compiler, introspector) over the batching driver. */
export class BatchingSqliteDialect extends SqliteDialect {
  constructor(private readonly driver: BatchingSqliteDriver) {
    // The database option is never used: the driver below replaces Kysely's.
    super({ database: driver as never })
  }

  override createDriver(): Driver {
    return this.driver
  }
}
