import { type CompiledQuery, type DatabaseConnection, type Driver, type QueryResult, SqliteDialect } from 'kysely'
import type { StatementCache } from './database.js'
import { type Batch, DurableBatch } from './durable-batch.js'
import { isTransactionFatalSqliteError } from './errors.js'
import { assertNotInTransaction } from './transaction-guard.js'

/**
 * Kysely's driver for the embedded store, writing through a durable batch (durable-batch.ts):
 * - a Kysely transaction is a member of the open batch (its savepoint); `transaction().execute()`
 *   resolves only once the batch's COMMIT made it durable, because releasing the connection waits for it;
 * - a write outside any transaction (a statement through `db.kysely`) is a member of its own, answered
 *   the same way;
 * - a read outside any transaction runs on a second, read-only connection, which sees the last COMMIT
 *   only: like a commit on PostgreSQL, a write becomes visible to other requests once it is durable, and
 *   never before its writer is answered. A scope that wrote (a `connection()` block, the migrator) reads
 *   on the writer so that it sees its own writes. `:memory:` has no second connection; reads there run
 *   on the writer and may see released members (nothing there is durable anyway);
 * - PRAGMA, VACUUM, ATTACH and DETACH do not work inside a transaction: the open batch is committed first.
 * Every statement still waits its turn on the one connection (a FIFO lock), as Kysely's driver did.
 */

/** Statements SQLite ignores or refuses inside a transaction. */
const OUTSIDE_TRANSACTIONS = /^\s*(pragma|vacuum|attach|detach)\b/i

function execute(statement: ReturnType<StatementCache['prepare']>, parameters: readonly unknown[]): QueryResult<unknown> {
  if (statement.reader) return { rows: statement.all(parameters as unknown[]) }
  const { changes, lastInsertRowid } = statement.run(parameters as unknown[])
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

export class BatchingSqliteDriver implements Driver {
  readonly batch: DurableBatch

  constructor(
    private readonly writer: StatementCache,
    private readonly reader: StatementCache | undefined,
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
      return execute(statement, parameters)
    }
    if (statement.readonly) {
      const onReader = this.reader !== undefined && scope.batches === undefined
      return execute(onReader ? this.reader!.prepare(sql) : statement, parameters)
    }
    const { result, batch } = this.batch.runStatement(() => execute(statement, parameters))
    scope.joined(batch)
    return result
  }
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
